package dev.daggers.runtime;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.analysis.StreamingJoinHelper;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.EventTimeWatermark;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What Spark's UnsupportedOperationChecker lets through but a dagger must not run: a join of two
 * streams whose state never expires. Spark runs an inner stream-stream join without a time bound
 * and keeps every row of both sides for ever; it needs, for each side, a bound on the other
 * side's event time in the join condition (or a watermarked column among the join keys).
 * The rule is Spark's own (StreamingJoinHelper, which decides what state it will drop).
 */
public final class StreamingChecks {
  private StreamingChecks() {}

  /** One line per join of two streams whose state on some side never expires. */
  public static String[] unboundedJoins(LogicalPlan optimized) {
    List<String> out = new ArrayList<>();
    collect(optimized, out);
    return out.toArray(new String[0]);
  }

  private static void collect(LogicalPlan plan, List<String> out) {
    if (plan instanceof Join) {
      Join join = (Join) plan;
      LogicalPlan left = join.left();
      LogicalPlan right = join.right();
      if (left.isStreaming() && right.isStreaming() && !StreamingJoinHelper.isWatermarkInJoinKeys(join)) {
        Option<Expression> condition = join.condition();
        boolean leftExpires = bounded(left, right, condition);
        boolean rightExpires = bounded(right, left, condition);
        if (!leftExpires || !rightExpires) {
          out.add((leftExpires ? "" : "left") + (!leftExpires && !rightExpires ? "," : "")
              + (rightExpires ? "" : "right"));
        }
      }
    }
    for (Object child : CollectionConverters.asJava(plan.children())) {
      collect((LogicalPlan) child, out);
    }
  }

  /** Whether the state of `side` can be dropped: the condition bounds the other side's event time. */
  private static boolean bounded(LogicalPlan side, LogicalPlan other, Option<Expression> condition) {
    List<Expression> watermarked = new ArrayList<>();
    for (Attribute a : CollectionConverters.asJava(other.output())) {
      if (a.metadata().contains(EventTimeWatermark.delayKey())) watermarked.add(a);
    }
    if (watermarked.isEmpty() || condition.isEmpty()) return false;
    AttributeSet sideAttributes = AttributeSet.apply(CollectionConverters.asScala((Iterable<Expression>) (Iterable<?>) CollectionConverters.asJava(side.output())));
    AttributeSet otherWatermarked = AttributeSet.apply(CollectionConverters.asScala(watermarked));
    Option<Object> value = StreamingJoinHelper.getStateValueWatermark(sideAttributes, otherWatermarked, condition,
        Option.apply((Object) Long.valueOf(0L)));
    return value.isDefined();
  }
}
