"""The JVM and conf of a SparkSession kaudit starts itself."""

from __future__ import annotations


def test_a_session_kaudit_starts_runs_the_throughput_collector_on_loopback(spark):
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    assert sorted(bean.getName() for bean in beans) == ["PS MarkSweep", "PS Scavenge"]
    conf = spark.sparkContext.getConf()
    assert (conf.get("spark.driver.bindAddress"), conf.get("spark.driver.host")) == ("127.0.0.1", "127.0.0.1")
