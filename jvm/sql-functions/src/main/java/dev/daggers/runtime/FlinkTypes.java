package dev.daggers.runtime;

import java.util.List;
import java.util.Locale;
import java.util.function.Function;

import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.analysis.FunctionRegistry;
import org.apache.spark.sql.catalyst.expressions.CaseWhen;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.DateFormatClass;
import org.apache.spark.sql.catalyst.expressions.Divide;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.expressions.IntegralDivide;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.Average;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * Flink semantics that depend on the type of a value, which the translation (dagger_runtime.sql,
 * sqlglot, no schemas) cannot see: functions whose builders run in Spark's analyser, once their
 * arguments are resolved and typed (ResolveFunctions skips a call until its children are
 * resolved), and pick the Spark expression from those types. The translation writes them after
 * both of its checks; an analyst's query may not name them (the __dagger_ prefix is reserved), and
 * what they build is made of allowed Spark expressions only, which PlanGuard checks in the
 * analysed plan as any other.
 *
 * <ul>
 *   <li>{@code __dagger_divide(a, b)}: integers divided as integers (truncated toward zero, as
 *       Java's), typed as the wider of the two; anything else Spark's {@code /}.</li>
 *   <li>{@code __dagger_avg(AVG(x) [FILTER ...])}: Flink's AVG of an integer (SUM and COUNT in
 *       BIGINT, their integer quotient as x's type) and of a FLOAT (the DOUBLE average as a FLOAT);
 *       other types Spark's AVG.</li>
 *   <li>{@code __dagger_typeof(x[, precision])}: Flink's name of x's type (a timestamp's precision
 *       3 unless given).</li>
 *   <li>{@code __dagger_cast_string(x[, precision])}: CAST(x AS STRING) as Flink prints it: a
 *       timestamp with `precision` fraction digits (3 unless given), a boolean as TRUE/FALSE.</li>
 * </ul>
 */
public final class FlinkTypes {
  private FlinkTypes() {}

  public static final String DIVIDE = "__dagger_divide";
  public static final String AVG = "__dagger_avg";
  public static final String TYPEOF = "__dagger_typeof";
  public static final String CAST_STRING = "__dagger_cast_string";

  /** The names registered, for the plan check's list of the runtime's functions. */
  public static String[] names() {
    return new String[] {DIVIDE, AVG, TYPEOF, CAST_STRING};
  }

  /** Registers the functions in the session's own function registry. */
  public static void register(SparkSession spark) {
    FunctionRegistry registry = spark.sessionState().functionRegistry();
    register(registry, DIVIDE, 2, 2, a -> divide(a.get(0), a.get(1)));
    register(registry, AVG, 1, 1, a -> avg(a.get(0)));
    register(registry, TYPEOF, 1, 2, a -> typeOf(a.get(0), a.size() == 2 ? a.get(1) : null));
    register(registry, CAST_STRING, 1, 2, a -> castString(a.get(0), a.size() == 2 ? a.get(1) : null));
  }

  private static void register(FunctionRegistry registry, String name, int min, int max,
                               Function<List<Expression>, Expression> build) {
    ExpressionInfo info = new ExpressionInfo(FlinkTypes.class.getName(), null, name,
        "_FUNC_: the dagger runtime's own (Flink's meaning by type)", "", "", "", "", "", "", "built-in");
    registry.registerFunction(FunctionIdentifier.apply(name), info,
        new AbstractFunction1<scala.collection.immutable.Seq<Expression>, Expression>() {
          @Override
          public Expression apply(scala.collection.immutable.Seq<Expression> arguments) {
            List<Expression> args = CollectionConverters.asJava(arguments);
            if (args.size() < min || args.size() > max) {
              throw new IllegalArgumentException(name + " takes " + min + (min == max ? "" : " to " + max)
                  + " arguments, got " + args.size());
            }
            return build.apply(args);
          }
        });
  }

  // --- division -----------------------------------------------------------------------------------

  /** 0 for a type that is not an integer, else its width in bytes. */
  static int integralWidth(DataType t) {
    if (t instanceof ByteType) {
      return 1;
    }
    if (t instanceof ShortType) {
      return 2;
    }
    if (t instanceof IntegerType) {
      return 4;
    }
    if (t instanceof LongType) {
      return 8;
    }
    return 0;
  }

  static Expression divide(Expression left, Expression right) {
    int l = integralWidth(left.dataType());
    int r = integralWidth(right.dataType());
    if (l == 0 || r == 0) {
      return new Divide(left, right);
    }
    // Spark's DIV: a BIGINT quotient truncated toward zero (NULL for a zero divisor, the runtime
    // never failing on a value); Flink types it as the wider operand
    DataType wider = l >= r ? left.dataType() : right.dataType();
    return cast(new IntegralDivide(left, right), wider);
  }

  // --- AVG ----------------------------------------------------------------------------------------

  static Expression avg(Expression arg) {
    if (!(arg instanceof AggregateExpression)
        || !(((AggregateExpression) arg).aggregateFunction() instanceof Average)) {
      return arg;
    }
    AggregateExpression aggregate = (AggregateExpression) arg;
    Expression x = ((Average) aggregate.aggregateFunction()).child();
    DataType type = x.dataType();
    if (integralWidth(type) > 0) {
      // Flink's IntegralAvgAggFunction: sum and count as BIGINT, NULL when the count is 0 (the
      // sum is NULL then), else CAST(sum / count AS x's type), the division Java's long division
      Expression sum = new Sum(x).toAggregateExpression(aggregate.isDistinct(), aggregate.filter());
      Expression count = new Count(CollectionConverters.asScala(List.of(x)).toList())
          .toAggregateExpression(aggregate.isDistinct(), aggregate.filter());
      return cast(new IntegralDivide(sum, count), type);
    }
    if (type instanceof FloatType) {
      // Flink's FloatAvgAggFunction: a DOUBLE sum divided by the count, as a FLOAT
      return cast(aggregate, DataTypes.FloatType);
    }
    return aggregate;
  }

  // --- TYPEOF -------------------------------------------------------------------------------------

  static Expression typeOf(Expression x, Expression precision) {
    String name;
    DataType t = x.dataType();
    boolean nullable = x.nullable();
    if (x instanceof Cast && ((Cast) x).child() instanceof Literal && !((Cast) x).child().nullable()) {
      // a typed literal (TIMESTAMP '...', DATE '...') is a cast of its text for Spark's analyser,
      // nullable as a cast that may fail; Flink types the literal itself, NOT NULL when it has a value
      nullable = x.eval(null) == null;
    }
    if (x instanceof Literal && ((Literal) x).value() instanceof UTF8String) {
      // a string literal is a CHAR of its length in Flink
      name = "CHAR(" + ((UTF8String) ((Literal) x).value()).numChars() + ") NOT NULL";
    } else if ((t instanceof TimestampType || t instanceof TimestampNTZType) && precision != null) {
      name = flinkType(t, nullable).replace("TIMESTAMP(3)", "TIMESTAMP(" + digits(precision) + ")");
    } else {
      name = flinkType(t, nullable);
    }
    return Literal.create(name, DataTypes.StringType);
  }

  /** A timestamp's precision, as the translation read it from the query: 0 to 9, else 3. */
  private static int digits(Expression precision) {
    if (precision instanceof Literal && ((Literal) precision).value() instanceof Integer) {
      return Math.max(0, Math.min(9, (Integer) ((Literal) precision).value()));
    }
    return 3;
  }

  /** Flink's summary string of a type (LogicalType.asSummaryString), " NOT NULL" when not nullable. */
  public static String flinkType(DataType t, boolean nullable) {
    return flinkTypeName(t) + (nullable ? "" : " NOT NULL");
  }

  // Spark's atomic types by their typeName(), with Flink's names (TIMESTAMP(3): the rowtime's and
  // the windows' type; Spark keeps no precision)
  private static final java.util.Map<String, String> ATOMIC = java.util.Map.ofEntries(
      java.util.Map.entry("boolean", "BOOLEAN"), java.util.Map.entry("byte", "TINYINT"),
      java.util.Map.entry("short", "SMALLINT"), java.util.Map.entry("integer", "INT"),
      java.util.Map.entry("long", "BIGINT"), java.util.Map.entry("float", "FLOAT"),
      java.util.Map.entry("double", "DOUBLE"), java.util.Map.entry("string", "STRING"),
      java.util.Map.entry("binary", "BYTES"), java.util.Map.entry("date", "DATE"),
      java.util.Map.entry("timestamp", "TIMESTAMP(3)"), java.util.Map.entry("timestamp_ntz", "TIMESTAMP(3)"),
      java.util.Map.entry("void", "NULL"));

  private static String flinkTypeName(DataType t) {
    String atomic = t instanceof StringType ? "STRING" : ATOMIC.get(t.typeName());
    if (atomic != null) {
      return atomic;
    }
    if (t instanceof DecimalType) {
      DecimalType d = (DecimalType) t;
      return "DECIMAL(" + d.precision() + ", " + d.scale() + ")";
    }
    if (t instanceof ArrayType) {
      ArrayType a = (ArrayType) t;
      return "ARRAY<" + flinkType(a.elementType(), a.containsNull()) + ">";
    }
    if (t instanceof MapType) {
      MapType m = (MapType) t;
      return "MAP<" + flinkType(m.keyType(), false) + ", " + flinkType(m.valueType(), m.valueContainsNull()) + ">";
    }
    if (t instanceof StructType) {
      StringBuilder out = new StringBuilder("ROW<");
      StructField[] fields = ((StructType) t).fields();
      for (int i = 0; i < fields.length; i++) {
        out.append(i == 0 ? "" : ", ").append('`').append(fields[i].name().replace("`", "``")).append("` ")
            .append(flinkType(fields[i].dataType(), fields[i].nullable()));
      }
      return out.append('>').toString();
    }
    return t.sql().toUpperCase(Locale.ROOT);
  }

  // --- CAST(x AS STRING) --------------------------------------------------------------------------

  static Expression castString(Expression x, Expression precision) {
    DataType t = x.dataType();
    if (t instanceof TimestampType || t instanceof TimestampNTZType) {
      int digits = precision == null ? 3 : digits(precision);
      String pattern = "yyyy-MM-dd HH:mm:ss" + (digits > 0 ? "." + "S".repeat(digits) : "");
      return new DateFormatClass(x, Literal.create(pattern, DataTypes.StringType));
    }
    if (t instanceof BooleanType) {
      List<Tuple2<Expression, Expression>> branches = List.of(
          new Tuple2<>(x, Literal.create("TRUE", DataTypes.StringType)),
          new Tuple2<>(new Not(x), Literal.create("FALSE", DataTypes.StringType)));
      return new CaseWhen(CollectionConverters.asScala(branches).toList(), Option.empty());
    }
    return cast(x, DataTypes.StringType);
  }

  private static Expression cast(Expression x, DataType to) {
    return new Cast(x, to, Option.empty());
  }
}
