package dev.daggers.runtime;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import org.apache.spark.sql.catalyst.analysis.FunctionRegistry;
import org.apache.spark.sql.catalyst.analysis.UnresolvedFunction;
import org.apache.spark.sql.catalyst.analysis.UnresolvedGenerator;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.expressions.InheritAnalysisRules;
import org.apache.spark.sql.catalyst.expressions.PlanExpression;
import org.apache.spark.sql.catalyst.expressions.PythonUDF;
import org.apache.spark.sql.catalyst.expressions.RuntimeReplaceable;
import org.apache.spark.sql.catalyst.expressions.ScalaUDF;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.UnresolvedWith;
import org.apache.spark.sql.catalyst.plans.logical.View;
import org.apache.spark.sql.catalyst.plans.logical.WithWindowDefinition;
import org.apache.spark.sql.classic.SparkSession;

import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The second sandbox check: an allow-list over Spark's own plans of the translated query.
 *
 * <p>It does not trust the Python side's parser: the query text Spark is about to run is parsed
 * by Spark's parser and checked before analysis (so nothing, not even a class lookup by
 * reflection during analysis, happens for a refused query), and the analysed plan is checked
 * again before anything executes. Only the logical operators and expression classes a dagger
 * needs are accepted; leaves must be the job's own stream views. Anything unknown is refused,
 * so a Spark upgrade that adds an operator or an expression narrows the sandbox, never widens it.
 */
public final class PlanGuard {
  private PlanGuard() {}

  private static final String LOGICAL = "org.apache.spark.sql.catalyst.plans.logical.";
  private static final String ANALYSIS = "org.apache.spark.sql.catalyst.analysis.";
  private static final String EXPR = "org.apache.spark.sql.catalyst.expressions.";

  /** Operators of a parsed dagger query (Spark's parser output). */
  private static final Set<String> PARSED_OPERATORS = names(LOGICAL,
      "Project", "Filter", "Aggregate", "Join", "Union", "Distinct", "SubqueryAlias", "Generate",
      "Window", "WithWindowDefinition", "Sort", "GlobalLimit", "LocalLimit", "UnresolvedWith");
  private static final Set<String> PARSED_OPERATORS_ANALYSIS = names(ANALYSIS,
      "UnresolvedSubqueryColumnAliases", "UnresolvedHaving");

  /** Operators of an analysed dagger query: the same shapes, resolved, plus what the analyser adds
   *  for windows (Expand for sliding windows) and CTEs. */
  private static final Set<String> ANALYZED_OPERATORS = names(LOGICAL,
      "Project", "Filter", "Aggregate", "Join", "Union", "Distinct", "SubqueryAlias", "Generate",
      "Window", "Sort", "GlobalLimit", "LocalLimit", "Expand", "WithCTE", "CTERelationDef",
      "CTERelationRef");

  /** Expression classes that are structure rather than functions: names, values, field access,
   *  aggregate and window wrappers, lambdas, subqueries, and what the parser and analyser build
   *  around them. Functions are allowed by name (from the Python side's allow-list) and mapped to
   *  their classes through Spark's function registry. */
  private static final Set<String> STRUCTURAL = union(
      names(EXPR, "AttributeReference", "Alias", "Literal", "SortOrder", "GetStructField",
          "GetArrayItem", "GetArrayStructFields", "GetMapValue", "LambdaFunction",
          "NamedLambdaVariable", "OuterReference", "ScalarSubquery", "Exists", "ListQuery",
          "InSubquery", "WindowExpression", "WindowSpecDefinition", "SpecifiedWindowFrame",
          "UnspecifiedFrame$", "RowFrame$", "RangeFrame$", "UnboundedPreceding$",
          "UnboundedFollowing$", "CurrentRow$", "PreciseTimestampConversion", "KnownNotNull",
          "CreateNamedStruct", "MultiAlias", "Cube", "Rollup", "GroupingSets",
          "WindowSpecReference", "Ascending$", "Descending$", "NullsFirst$", "NullsLast$",
          "UnresolvedNamedLambdaVariable", "TimeWindow", "SessionWindow"),
      // what the analyser turns date and time arithmetic (+, -) and window bounds into
      names(EXPR, "KnownNullable", "DatetimeSub", "TimeAdd", "DateAddInterval", "DateAddYMInterval",
          "TimestampAddYMInterval", "TimestampAddInterval", "SubtractTimestamps", "SubtractDates",
          "DateAdd", "DateSub", "MultiplyInterval", "DivideInterval", "MultiplyYMInterval",
          "MultiplyDTInterval", "DivideYMInterval", "DivideDTInterval", "UnaryMinus",
          "ExtractANSIIntervalDays"),
      names(EXPR + "aggregate.", "AggregateExpression", "Complete$"),
      names(ANALYSIS, "UnresolvedAttribute", "UnresolvedStar", "UnresolvedAlias",
          "UnresolvedExtractValue", "UnresolvedWindowExpression", "UnresolvedOrdinal"));

  /** Classes built by functions that Spark registers through a builder rather than a class:
   *  function name -> the classes its builder makes. */
  private static final Map<String, List<String>> BUILT = Map.ofEntries(
      Map.entry("ceil", List.of(EXPR + "Ceil", EXPR + "RoundCeil")),
      Map.entry("ceiling", List.of(EXPR + "Ceil", EXPR + "RoundCeil")),
      Map.entry("floor", List.of(EXPR + "Floor", EXPR + "RoundFloor")),
      Map.entry("contains", List.of(EXPR + "Contains", EXPR + "BinaryPredicate")),
      Map.entry("startswith", List.of(EXPR + "StartsWith", EXPR + "BinaryPredicate")),
      Map.entry("endswith", List.of(EXPR + "EndsWith", EXPR + "BinaryPredicate")),
      Map.entry("collate", List.of(EXPR + "Collate", EXPR + "UnresolvedCollation", EXPR + "ResolvedCollation")),
      Map.entry("unix_date", List.of(EXPR + "UnixDate", EXPR + "TimestampDiff")),
      Map.entry("count_min_sketch", List.of(EXPR + "aggregate.CountMinSketchAgg")),
      Map.entry("date_part", List.of(EXPR + "DatePart", EXPR + "Extract")),
      Map.entry("datepart", List.of(EXPR + "DatePart", EXPR + "Extract")),
      Map.entry("explode", List.of(EXPR + "Explode")),
      Map.entry("explode_outer", List.of(EXPR + "Explode")),
      Map.entry("posexplode", List.of(EXPR + "PosExplode")),
      Map.entry("posexplode_outer", List.of(EXPR + "PosExplode")),
      Map.entry("inline", List.of(EXPR + "Inline")),
      Map.entry("inline_outer", List.of(EXPR + "Inline")),
      Map.entry("lpad", List.of(EXPR + "StringLPad", EXPR + "BinaryPad")),
      Map.entry("rpad", List.of(EXPR + "StringRPad", EXPR + "BinaryPad")),
      Map.entry("make_timestamp_ltz", List.of(EXPR + "MakeTimestamp")),
      Map.entry("make_timestamp_ntz", List.of(EXPR + "MakeTimestamp")),
      Map.entry("try_make_timestamp_ltz", List.of(EXPR + "MakeTimestamp", EXPR + "TryEval")),
      Map.entry("try_make_timestamp_ntz", List.of(EXPR + "MakeTimestamp", EXPR + "TryEval")),
      Map.entry("mask", List.of(EXPR + "Mask")),
      Map.entry("mode", List.of(EXPR + "aggregate.Mode")),
      Map.entry("parse_json", List.of(EXPR + "variant.ParseJson")),
      Map.entry("try_parse_json", List.of(EXPR + "variant.ParseJson")),
      Map.entry("percentile_cont", List.of(EXPR + "aggregate.PercentileCont")),
      Map.entry("percentile_disc", List.of(EXPR + "aggregate.PercentileDisc")),
      Map.entry("to_char", List.of(EXPR + "ToCharacter", EXPR + "DateFormatClass")),
      Map.entry("to_varchar", List.of(EXPR + "ToCharacter", EXPR + "DateFormatClass")),
      Map.entry("to_timestamp_ltz", List.of(EXPR + "ParseToTimestamp")),
      Map.entry("to_timestamp_ntz", List.of(EXPR + "ParseToTimestamp")),
      Map.entry("try_to_timestamp", List.of(EXPR + "ParseToTimestamp")),
      Map.entry("try_avg", List.of(EXPR + "aggregate.TryAverage")),
      Map.entry("try_sum", List.of(EXPR + "aggregate.TrySum")),
      Map.entry("variant_get", List.of(EXPR + "variant.VariantGet")),
      Map.entry("try_variant_get", List.of(EXPR + "variant.VariantGet")),
      Map.entry("!=", List.of(EXPR + "Not", EXPR + "EqualTo")),
      Map.entry("<>", List.of(EXPR + "Not", EXPR + "EqualTo")),
      Map.entry("||", List.of(EXPR + "Concat")),
      Map.entry("case", List.of(EXPR + "CaseWhen")));

  private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  /** Spark settings the sandbox relies on: key -> required value. */
  private static final Map<String, String> REQUIRED_SETTINGS = Map.of(
      "spark.sql.variable.substitute", "false",
      "spark.sql.runSQLOnFiles", "false");

  /**
   * Checks the query text Spark is about to run, parsed by Spark's own parser. Nothing is
   * analysed or executed. Returns the refusals, empty when the query may run.
   */
  public static String[] checkParsed(SparkSession spark, String sql, String[] functions,
                                     String[] udfs, String[] streams) {
    List<String> settings = settingsProblems(spark);
    if (!settings.isEmpty()) {
      return settings.toArray(new String[0]);
    }
    LogicalPlan parsed;
    try {
      parsed = spark.sessionState().sqlParser().parsePlan(sql);
    } catch (Exception e) {  // ParseException, declared by the Scala parser
      String first = String.valueOf(e.getMessage()).strip().split("\n")[0];
      return new String[] {"Spark cannot parse the translated query: " + first};
    }
    Walk walk = new Walk(spark, true, functions, udfs, streams);
    walk.collectCteNames(parsed);
    walk.plan(parsed);
    return walk.refusals.toArray(new String[0]);
  }

  /** Checks an analysed plan before anything executes. Returns the refusals. */
  public static String[] checkAnalyzed(SparkSession spark, LogicalPlan analyzed, String[] functions,
                                       String[] udfs, String[] streams) {
    Walk walk = new Walk(spark, false, functions, udfs, streams);
    walk.plan(analyzed);
    return walk.refusals.toArray(new String[0]);
  }

  /** Expression classes that more than one classification claims: an allowed and a refused
   *  function built from the same class would let the refused one through. */
  public static String[] sharedClasses(String[] allowed, String[] refused) {
    Set<String> allowedClasses = classesOf(new HashSet<>(List.of(allowed)));
    List<String> shared = new ArrayList<>();
    for (String name : refused) {
      for (String cls : classesOf(Set.of(name))) {
        if (allowedClasses.contains(cls) && !STRUCTURAL.contains(cls)) {
          shared.add(name + " -> " + cls);
        }
      }
    }
    return shared.toArray(new String[0]);
  }

  private static List<String> settingsProblems(SparkSession spark) {
    List<String> problems = new ArrayList<>();
    for (Map.Entry<String, String> e : REQUIRED_SETTINGS.entrySet()) {
      String value = spark.conf().get(e.getKey(), "<unset>");
      if (!e.getValue().equalsIgnoreCase(value)) {
        problems.add("the Spark session is not sandboxed: " + e.getKey() + " is " + value
            + ", must be " + e.getValue());
      }
    }
    return problems;
  }

  private static Set<String> classesOf(Set<String> functionNames) {
    Set<String> classes = new HashSet<>();
    scala.collection.immutable.Map<String, Tuple2<ExpressionInfo, scala.Function1<
        scala.collection.immutable.Seq<Expression>, Expression>>> registry = FunctionRegistry.expressions();
    scala.collection.immutable.Map<String, ExpressionInfo> operators = FunctionRegistry.builtinOperators();
    for (String name : functionNames) {
      String key = name.toLowerCase(Locale.ROOT);
      scala.Option<Tuple2<ExpressionInfo, scala.Function1<scala.collection.immutable.Seq<Expression>,
          Expression>>> entry = registry.get(key);
      if (entry.isDefined()) {
        classes.add(entry.get()._1().getClassName());
      }
      scala.Option<ExpressionInfo> op = operators.get(key);
      if (op.isDefined()) {
        classes.add(op.get().getClassName());
      }
      List<String> built = BUILT.get(key);
      if (built != null) {
        classes.addAll(built);
      }
    }
    return classes;
  }

  private static Set<String> names(String prefix, String... simple) {
    Set<String> out = new HashSet<>();
    for (String s : simple) {
      out.add(prefix + s);
    }
    return Collections.unmodifiableSet(out);
  }

  @SafeVarargs
  private static Set<String> union(Set<String>... sets) {
    Set<String> out = new HashSet<>();
    for (Set<String> s : sets) {
      out.addAll(s);
    }
    return Collections.unmodifiableSet(out);
  }

  private static String lower(String s) {
    return s.toLowerCase(Locale.ROOT);
  }

  private static String simple(Object o) {
    String name = o.getClass().getSimpleName();
    return name.endsWith("$") ? name.substring(0, name.length() - 1) : name;
  }

  /** What the analyst is told for the operators and expressions most often tried. */
  private static String label(Object node) {
    switch (simple(node)) {
      case "ScriptTransformation":
        return "script transformation (TRANSFORM ... USING) runs a shell command";
      case "CallMethodViaReflection":
      case "TryReflect":
        return "reflect/java_method calls any Java method in the cluster's JVM";
      case "UnresolvedHint":
      case "ResolvedHint":
        return "query hints are not allowed";
      case "OneRowRelation":
      case "LocalRelation":
      case "UnresolvedInlineTable":
      case "ResolvedInlineTable":
      case "Range":
      case "LogicalRelation":
      case "DataSourceV2Relation":
      case "HiveTableRelation":
      case "UnresolvedTableValuedFunction":
        return simple(node) + " reads something other than the job's streams";
      default:
        break;
    }
    if (node instanceof LogicalPlan) {
      return "operator " + simple(node) + " is not allowed in a dagger query";
    }
    return "expression " + ((Expression) node).prettyName() + " (" + simple(node)
        + ") is not allowed in a dagger query";
  }

  private static final class Walk {
    final boolean parsed;
    final Set<String> functions = new HashSet<>();
    final Set<String> udfs = new HashSet<>();
    final Set<String> streams = new HashSet<>();
    final Set<String> ctes = new HashSet<>();
    final Set<String> expressionClasses;
    final Set<String> refusals = new LinkedHashSet<>();
    final Map<Object, Boolean> seen = new IdentityHashMap<>();

    Walk(SparkSession spark, boolean parsed, String[] functions, String[] udfs, String[] streams) {
      this.parsed = parsed;
      for (String f : functions) {
        this.functions.add(lower(f));
      }
      for (String u : udfs) {
        this.udfs.add(lower(u));
      }
      for (String s : streams) {
        this.streams.add(lower(s));
      }
      Set<String> classes = new HashSet<>(STRUCTURAL);
      classes.addAll(classesOf(this.functions));
      this.expressionClasses = classes;
    }

    void refuse(String what) {
      refusals.add(what);
    }

    void collectCteNames(LogicalPlan plan) {
      if (plan instanceof UnresolvedWith) {
        for (Tuple2<String, ?> cte : CollectionConverters.asJava(((UnresolvedWith) plan).cteRelations())) {
          ctes.add(lower(cte._1()));
        }
      }
      for (Object child : CollectionConverters.asJava(plan.children())) {
        collectCteNames((LogicalPlan) child);
      }
      for (Object inner : CollectionConverters.asJava(plan.innerChildren())) {
        if (inner instanceof LogicalPlan) {
          collectCteNames((LogicalPlan) inner);
        }
      }
      for (Expression e : CollectionConverters.asJava(plan.expressions())) {
        collectCteNamesIn(e);
      }
    }

    private void collectCteNamesIn(Expression e) {
      if (e instanceof PlanExpression && ((PlanExpression<?>) e).plan() instanceof LogicalPlan) {
        collectCteNames((LogicalPlan) ((PlanExpression<?>) e).plan());
      }
      for (Object child : CollectionConverters.asJava(e.children())) {
        collectCteNamesIn((Expression) child);
      }
    }

    void plan(LogicalPlan p) {
      if (seen.put(p, Boolean.TRUE) != null) {
        return;
      }
      if (p instanceof View) {
        View v = (View) p;
        String name = v.desc().identifier().table();
        if (parsed || !v.isTempView() || !streams.contains(lower(name))) {
          refuse("the view or table " + name + " is not one of the job's streams");
        }
        return;  // a stream's own plan (Kafka source, decoder) is the runtime's, not the analyst's
      }
      if (p instanceof UnresolvedRelation) {
        List<String> parts = CollectionConverters.asJava(((UnresolvedRelation) p).multipartIdentifier());
        String name = String.join(".", parts);
        if (parts.size() != 1 || !(streams.contains(lower(parts.get(0))) || ctes.contains(lower(parts.get(0))))) {
          refuse("table " + name + " is not one of the job's streams");
        }
        return;
      }
      String cls = p.getClass().getName();
      boolean allowed = parsed ? PARSED_OPERATORS.contains(cls) || PARSED_OPERATORS_ANALYSIS.contains(cls)
          : ANALYZED_OPERATORS.contains(cls);
      if (!allowed) {
        refuse(label(p));
        return;
      }
      for (Expression e : CollectionConverters.asJava(p.expressions())) {
        expression(e);
      }
      if (p instanceof WithWindowDefinition) {  // WINDOW w AS (...): held in a map, not in expressions()
        for (Expression e : CollectionConverters.asJava(((WithWindowDefinition) p).windowDefinitions()).values()) {
          expression(e);
        }
      }
      for (Object child : CollectionConverters.asJava(p.children())) {
        plan((LogicalPlan) child);
      }
      for (Object inner : CollectionConverters.asJava(p.innerChildren())) {
        if (inner instanceof LogicalPlan) {
          plan((LogicalPlan) inner);
        }
      }
    }

    void expression(Expression e) {
      if (seen.put(e, Boolean.TRUE) != null) {
        return;
      }
      if (e instanceof UnresolvedFunction) {
        List<String> parts = CollectionConverters.asJava(((UnresolvedFunction) e).nameParts());
        String name = String.join(".", parts);
        if (parts.size() != 1 || !NAME.matcher(parts.get(0)).matches()) {
          refuse("function " + name + "() is not allowed: call functions by their plain name");
        } else if (!functions.contains(lower(name)) && !udfs.contains(lower(name))) {
          refuse("function " + name + "() is not allowed in a dagger query");
        }
        children(e);
        return;
      }
      if (e instanceof UnresolvedGenerator) {  // LATERAL VIEW name(...)
        org.apache.spark.sql.catalyst.FunctionIdentifier id = ((UnresolvedGenerator) e).name();
        if (id.database().isDefined() || id.catalog().isDefined() || !NAME.matcher(id.funcName()).matches()
            || !functions.contains(lower(id.funcName()))) {
          refuse("generator " + id.unquotedString() + "() is not allowed in a dagger query");
        }
        children(e);
        return;
      }
      if (e instanceof ScalaUDF || e instanceof PythonUDF) {
        String name = e instanceof ScalaUDF ? ((ScalaUDF) e).udfName().getOrElse(() -> "<anonymous>")
            : ((PythonUDF) e).name();
        if (!udfs.contains(lower(name))) {
          refuse("user-defined function " + name + "() is not one of the runtime's");
        }
        children(e);
        return;
      }
      String cls = e.getClass().getName();
      if (!expressionClasses.contains(cls)) {
        refuse(label(e));
        return;
      }
      if (e instanceof PlanExpression && ((PlanExpression<?>) e).plan() instanceof LogicalPlan) {
        plan((LogicalPlan) ((PlanExpression<?>) e).plan());
      }
      if (e instanceof RuntimeReplaceable && e instanceof InheritAnalysisRules) {
        // an allowed function's own implementation is Spark's; only its arguments are the analyst's
        for (Expression arg : CollectionConverters.asJava(((InheritAnalysisRules) e).parameters())) {
          expression(arg);
        }
        return;
      }
      children(e);
    }

    private void children(Expression e) {
      for (Object child : CollectionConverters.asJava(e.children())) {
        expression((Expression) child);
      }
    }
  }
}
