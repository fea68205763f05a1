"""kaudit: offline audit of Kafka consumer coordination."""
