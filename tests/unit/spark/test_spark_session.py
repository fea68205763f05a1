"""The JVM and conf of a SparkSession kaudit starts itself."""

from __future__ import annotations


def test_a_session_kaudit_starts_runs_the_throughput_collector_on_loopback(spark):
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    assert sorted(bean.getName() for bean in beans) == ["PS MarkSweep", "PS Scavenge"]
    conf = spark.sparkContext.getConf()
    assert (conf.get("spark.driver.bindAddress"), conf.get("spark.driver.host")) == ("127.0.0.1", "127.0.0.1")


def test_code_generation_follows_the_run_size_and_keeps_the_users_setting(spark):
    from pipelines.spark.session import CODEGEN, SMALL_RUN_ROWS, size_to_run

    def settings():
        return {key: spark.conf.get(key) for key in CODEGEN}

    try:
        size_to_run(spark, SMALL_RUN_ROWS - 1, {})
        assert settings() == {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
        interpreted = spark.range(1000).selectExpr("id % 7 as k").groupBy("k").count().orderBy("k").collect()
        size_to_run(spark, SMALL_RUN_ROWS, {})
        assert settings() == {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}
        assert spark.range(1000).selectExpr("id % 7 as k").groupBy("k").count().orderBy("k").collect() == interpreted
        spark.conf.set("spark.sql.codegen.wholeStage", "true")
        size_to_run(spark, 10, {"spark.sql.codegen.wholeStage": "true"})
        assert settings() == {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
    finally:
        for key in CODEGEN:
            spark.conf.unset(key)
