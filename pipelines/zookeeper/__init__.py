"""ZooKeeper readers: a read-only live walker (kazoo) and an offline data-dir reader
(snapshot + transaction-log replay). Both produce the same client-visible ``raw/znodes`` rows."""
