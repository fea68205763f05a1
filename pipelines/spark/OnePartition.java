/*
 * kaudit's session extension (spark.sql.extensions) for the Spark driver JVMs kaudit starts itself
 * (pipelines/spark/session.py): a small run's queries move no rows between partitions.
 *
 * A small run's session plans every exchange into one partition (spark.sql.shuffle.partitions 1,
 * adaptive execution off: pipelines/spark/session.py, SIZED). An exchange into one partition
 * still writes its input to shuffle files in a stage of its own and reads them back in the next:
 * each aggregation, join, window and sort of the core build and of every dbt model added a stage,
 * its shuffle files and its task binary. Hashing, or range-partitioning, rows into one partition
 * puts every row in it, which is what a coalesce into one partition does without moving them: the
 * rule below, run after EnsureRequirements has placed the exchanges (a columnar rule's
 * preColumnarTransitions, QueryExecution.preparations in Spark 4.1), replaces each shuffle
 * exchange into one partition with CoalesceExec(1): its input partitions are read one after the
 * other by the task of the operator above, in the same stage. A broadcast exchange stays.
 *
 * Only while spark.kaudit.onePartition is true and adaptive execution is off (a big run's
 * exchanges, and a plan adaptive execution splits into query stages, are Spark's own): a big run's
 * partial aggregation of millions of rows must not become one task.
 *
 * Built into <venv>/kaudit-spark.jar by `make` (python -m pipelines.spark.jar); set as
 * spark.sql.extensions only when that jar exists.
 */
package kaudit.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.CoalesceExec;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec;
import org.apache.spark.sql.internal.SQLConf;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractPartialFunction;
import scala.runtime.BoxedUnit;

public final class OnePartition extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  /** The runtime setting that turns the rule on (pipelines/spark/session.py, SIZED). */
  public static final String SETTING = "spark.kaudit.onePartition";

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectColumnar(new AbstractFunction1<SparkSession, ColumnarRule>() {
      @Override
      public ColumnarRule apply(SparkSession session) {
        return new ColumnarRule() {
          @Override
          public Rule<SparkPlan> preColumnarTransitions() {
            return new CoalesceOnePartitionExchanges();
          }
        };
      }
    });
    return BoxedUnit.UNIT;
  }

  /** Each shuffle exchange into one partition becomes a coalesce into one partition. */
  static final class CoalesceOnePartitionExchanges extends Rule<SparkPlan> {
    @Override
    public SparkPlan apply(SparkPlan plan) {
      SQLConf conf = SQLConf.get();
      if (!"true".equals(conf.getConfString(SETTING, "false")) || conf.adaptiveExecutionEnabled()) {
        return plan;
      }
      return plan.transformUp(new AbstractPartialFunction<SparkPlan, SparkPlan>() {
        @Override
        public boolean isDefinedAt(SparkPlan node) {
          return node instanceof ShuffleExchangeExec exchange
              && exchange.outputPartitioning().numPartitions() == 1;
        }

        @Override
        public <A1 extends SparkPlan, B1> B1 applyOrElse(A1 node, scala.Function1<A1, B1> otherwise) {
          if (!isDefinedAt(node)) {
            return otherwise.apply(node);
          }
          @SuppressWarnings("unchecked")
          B1 coalesced = (B1) new CoalesceExec(1, ((ShuffleExchangeExec) node).child());
          return coalesced;
        }
      });
    }
  }
}
