"""Test data and expected results made independently of kaudit, for the tests, the demo
generator (``scripts/make_demo_data.py``) and the benchmarks.

Encoders built on kafka-python and kio (:mod:`testkit.segments`, :mod:`testkit.kraft`),
``raw/znodes`` tables (:mod:`testkit.znodes`), a real ZooKeeper 3.8 server
(:mod:`testkit.zk_server`), Java's ``String.hashCode`` (:mod:`testkit.javahash`), the audit
rules computed from what a test wrote (:mod:`testkit.oracle`), headless Chromium
(:mod:`testkit.chromium`) and the demo cluster's generator (:mod:`testkit.demo`).

Nothing here imports ``pipelines``: test data and expected results share no code with what
they test.
"""
