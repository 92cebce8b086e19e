package dev.daggers.runtime;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.LambdaFunction;
import org.apache.spark.sql.catalyst.expressions.NamedLambdaVariable;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.PlanExpression;
import org.apache.spark.sql.catalyst.expressions.RuntimeReplaceable;
import org.apache.spark.sql.catalyst.expressions.ScalaUDF;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.unsafe.types.CalendarInterval;
import org.apache.spark.unsafe.types.UTF8String;

import scala.jdk.javaapi.CollectionConverters;

/**
 * What the analyst's constants may cost before Spark evaluates them.
 *
 * <p>Spark's optimizer evaluates every constant expression once, in the driver, while it plans
 * the query (ConstantFolding): {@code repeat('x', 2000000000)} runs the driver out of heap before
 * anything is read, and {@code 'aaaa...' RLIKE 'a*a*a*...b'} holds it for hours. This walks the
 * analysed plan bottom-up and, for the functions whose output can be far larger than their input
 * (repeat, space, lpad/rpad, sequence, array_repeat, array_insert, printf widths, format_number
 * and what contains them), works out what a constant would build from its already-checked
 * arguments, refusing it beyond the caps, before anything that large is evaluated. It also
 * returns each regex that a regex function receives as a constant (RLIKE, regexp_extract,
 * split, LIKE patterns...), evaluated, so that the caller can check it, and
 * {@link #regexProblem} runs a regex on pumped texts under a step budget. {@link #optimize} runs
 * Spark's optimizer under a time budget.
 */
public final class ConstantGuard {
  private ConstantGuard() {}

  /** One refusal or one regex: {@code kind \0 function \0 text}; kind is "refuse" or "regex". */
  private static String item(String kind, String function, String text) {
    return kind + '\u0000' + function + '\u0000' + text;
  }

  /**
   * Checks every expression of an analysed plan. Returns refusals ("refuse\0function\0why") and
   * the constant regexes ("regex\0function\0pattern"), refusals first.
   */
  public static String[] check(LogicalPlan analyzed, long maxString, long maxCount, long maxConstant) {
    Walk walk = new Walk(maxString, maxCount, maxConstant);
    walk.plan(analyzed);
    List<String> out = new ArrayList<>(walk.refusals);
    if (walk.refusals.isEmpty()) {
      out.addAll(walk.regexes);
    }
    return out.toArray(new String[0]);
  }

  /**
   * {@link #check} in a thread of its own, for at most {@code millis} (it evaluates constant
   * counts, which may be slow): a TimeoutException past that, as {@link #optimize} does; an
   * OutOfMemoryError or any other failure is thrown to the caller, who says it as a refusal.
   */
  public static String[] check(LogicalPlan analyzed, long maxString, long maxCount, long maxConstant, long millis)
      throws Exception {
    return budgeted(() -> check(analyzed, maxString, maxCount, maxConstant), millis,
        "Spark took longer than " + (millis / 1000.0) + " s to evaluate the query's constant expressions");
  }

  /** A regex's own syntax error (Java's message, first line), or null when it compiles. */
  public static String regexError(String regex) {
    try {
      Pattern.compile(regex);
      return null;
    } catch (java.util.regex.PatternSyntaxException e) {
      String d = e.getDescription();
      return (d == null ? "invalid" : d) + (e.getIndex() >= 0 ? " near index " + e.getIndex() : "");
    } catch (RuntimeException | StackOverflowError e) {
      return e.getClass().getSimpleName();
    }
  }

  /** Each function Spark implements by another (to_timestamp, url_decode, regexp_count...)
   *  replaced by that one, as the optimizer does before it folds constants. */
  private static final class Replace
      extends scala.runtime.AbstractPartialFunction<Expression, Expression> {
    @Override
    public boolean isDefinedAt(Expression e) {
      return e instanceof RuntimeReplaceable;
    }

    @Override
    public <A1 extends Expression, B1> B1 applyOrElse(A1 e, scala.Function1<A1, B1> otherwise) {
      if (e instanceof RuntimeReplaceable) {
        @SuppressWarnings("unchecked")
        B1 out = (B1) replace(((RuntimeReplaceable) e).replacement());
        return out;
      }
      return otherwise.apply(e);
    }
  }

  /** An expression as the optimizer evaluates it (see {@link Replace}). */
  static Expression replace(Expression e) {
    return e.transformUp(new Replace());
  }

  /** A constant: foldable once Spark's replacements are made. */
  static boolean constant(Expression e) {
    return e.foldable() || replace(e).foldable();
  }

  static Object evaluate(Expression e) {
    return replace(e).eval(null);
  }

  /** The constant regexes of a plan ("regex\0function\0pattern"), with no size checks: for the
   *  optimized plan, where constants that came through a subquery's column are literals. */
  public static String[] regexesOf(LogicalPlan plan) {
    Walk walk = new Walk(Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE);
    walk.plan(plan);
    return walk.regexes.toArray(new String[0]);
  }

  /** What a refused or failed constant is called in the analyst's terms. */
  private static String name(Expression e) {
    if (e instanceof ScalaUDF) {
      return ((ScalaUDF) e).udfName().getOrElse(() -> "udf");
    }
    return e.prettyName();
  }

  private static final class Walk {
    final long maxString;
    final long maxCount;
    final long maxConstant;
    final Set<String> refusals = new LinkedHashSet<>();
    final Set<String> regexes = new LinkedHashSet<>();
    final Map<Object, Long> bounds = new IdentityHashMap<>();
    final Map<Object, Boolean> seen = new IdentityHashMap<>();

    Walk(long maxString, long maxCount, long maxConstant) {
      this.maxString = maxString;
      this.maxCount = maxCount;
      this.maxConstant = maxConstant;
    }

    void plan(LogicalPlan p) {
      if (seen.put(p, Boolean.TRUE) != null) {
        return;
      }
      for (Expression e : CollectionConverters.asJava(p.expressions())) {
        expression(e);
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

    void refuse(Expression e, String why) {
      refusals.add(item("refuse", name(e), why));
    }

    /** An upper bound of the size (characters, bytes or elements, nested sizes multiplied) of
     *  what e builds when it is a constant; Long.MAX_VALUE when unknown. Children first, so a
     *  constant is only ever evaluated once its arguments are known to be small. */
    long expression(Expression e) {
      Long known = bounds.get(e);
      if (known != null) {
        return known;
      }
      if (e instanceof PlanExpression && ((PlanExpression<?>) e).plan() instanceof LogicalPlan) {
        plan((LogicalPlan) ((PlanExpression<?>) e).plan());
      }
      List<Long> sizes = new ArrayList<>();
      long sum = 1;
      for (Object child : CollectionConverters.asJava(e.children())) {
        long size = expression((Expression) child);
        sizes.add(size);
        sum = add(sum, size);
      }
      if (!refusals.isEmpty()) {
        bounds.put(e, Long.MAX_VALUE);
        return Long.MAX_VALUE;  // a child is refused: nothing above it is evaluated
      }
      long bound = bound(e, sizes, sum);
      if (bound > 1 && scalar(e)) {
        bound = 1;  // a number, boolean or time: one value, however large what it read
      }
      if (bound > maxConstant && refusals.isEmpty() && (BUILDERS.contains(e.getClass().getSimpleName())
          || constant(e))) {
        // a constant is built in the driver while Spark plans the query; one that reads a column too,
        // for every row
        refuse(e, "it would build about " + bound + " characters or elements from its constants "
            + (constant(e) ? "(in the driver, while Spark plans the query)" : "for every row")
            + "; an expression may build at most " + maxConstant + " from its constants");
      }
      bounds.put(e, bound);
      if (refusals.isEmpty()) {
        regex(e);
      }
      return bound;
    }

    /** Whether e's value is one fixed-size value (a number, boolean, date or timestamp). */
    private static boolean scalar(Expression e) {
      try {
        org.apache.spark.sql.types.DataType t = e.dataType();
        return t instanceof org.apache.spark.sql.types.AtomicType
            && !(t instanceof org.apache.spark.sql.types.StringType)
            && !(t instanceof org.apache.spark.sql.types.BinaryType);
      } catch (Exception ex) {  // a window frame has no type (Spark's SparkException, a checked one)
        return false;
      }
    }

    /** What builds more than it reads: the functions bound() multiplies for. */
    private static final Set<String> BUILDERS = Set.of("StringRepeat", "StringSpace", "StringLPad", "StringRPad",
        "BinaryPad", "ArrayRepeat", "ArrayInsert", "Sequence", "FormatString", "FormatNumber", "RegExpReplace",
        "ArrayTransform", "ArrayFilter", "ArrayExists", "ArrayForAll", "ArraySort", "ZipWith", "MapFilter",
        "TransformKeys", "TransformValues", "MapZipWith", "ArrayAggregate", "ArrayReduce");

    private long bound(Expression e, List<Long> sizes, long sum) {
      String cls = e.getClass().getSimpleName();
      List<Expression> args = CollectionConverters.asJava(e.children());
      if (e instanceof Literal) {
        Object v = ((Literal) e).value();
        long size = size(v);
        if (size > maxString) {
          refuse(e, "a literal of " + size + " characters or bytes; literals may have at most "
              + maxString);
        }
        return size;
      }
      switch (cls) {
        case "StringRepeat": {
          long times = count(e, args.get(1), "its count");
          return mul(sizes.get(0), Math.max(times, 0));
        }
        case "StringSpace":
          return Math.max(count(e, args.get(0), "its count"), 0);
        case "StringLPad":
        case "StringRPad":
        case "BinaryPad":
          return Math.max(count(e, args.get(1), "its length"), 0);
        case "ArrayRepeat": {
          long times = count(e, args.get(1), "its count");
          return mul(Math.max(sizes.get(0), 1), Math.max(times, 0));
        }
        case "ArrayInsert": {
          long pos = count(e, args.get(1), "its position");
          return add(sizes.get(0), Math.abs(pos));
        }
        case "Sequence":
          return sequence(e, args);
        case "FormatString": {
          long widest = formatWidth(e, args.get(0));
          return add(sum, mul(widest, args.size()));
        }
        case "FormatNumber":
          return add(sum, Math.max(count(e, args.get(1), "its number of decimal places"), 0));
        case "RegExpReplace":
          // an empty match between every two characters inserts the replacement n + 1 times
          return add(sum, mul(sizes.get(0), sizes.get(2)));
        case "ArrayTransform":
        case "ArrayFilter":
        case "ArrayExists":
        case "ArrayForAll":
        case "ArraySort":
        case "ZipWith":
        case "MapFilter":
        case "TransformKeys":
        case "TransformValues":
        case "MapZipWith":
          // a function applied to each element: the elements times what one application builds
          return higherOrder(sizes);
        case "ArrayAggregate":
        case "ArrayReduce":
          return aggregate(args, sizes);
        case "StringReplace":
          // each character of the text may be replaced by the whole replacement
          return add(sum, mul(sizes.get(0), args.size() > 2 ? sizes.get(2) : 1));
        case "ArrayJoin":
        case "ConcatWs":
          // a delimiter (and null replacement) between every two elements
          return add(sum, mul(sum, sum));
        case "Hex":
          return add(mul(sum, 2), 64);
        case "Bin":
          return add(sum, 64);
        case "Cast":
        case "Upper":
        case "Lower":
        case "InitCap":
          return add(mul(sum, 3), 64);
        case "Base64":
        case "Encode":
        case "Decode":
        case "StringDecode":
        case "ToJson":
        case "StructsToJson":
        case "ToCsv":
        case "StructsToCsv":
        case "ToXml":
        case "StructsToXml":
        case "UrlEncode":
          return mul(sum, 12);
        default:
          if (NO_GROWTH.contains(cls) || e instanceof Literal || e.children().isEmpty()) {
            return sum;
          }
          // a function not known to build no more than it reads: bounded conservatively
          return mul(sum, 16);
      }
    }

    /** Functions known to build at most what they read (their arguments' sizes added). */
    private static final Set<String> NO_GROWTH = Set.of("Concat", "Substring", "Left", "Right", "StringTrim",
        "StringTrimLeft", "StringTrimRight", "StringTrimBoth", "Length", "OctetLength", "BitLength", "Levenshtein",
        "Size", "Reverse", "CreateArray", "CreateNamedStruct", "CreateMap", "GetStructField", "GetArrayItem",
        "GetMapValue", "ElementAt", "Coalesce", "If", "CaseWhen", "Least", "Greatest", "Alias", "AttributeReference",
        "BoundReference", "And", "Or", "Not", "EqualTo", "EqualNullSafe", "LessThan", "LessThanOrEqual",
        "GreaterThan", "GreaterThanOrEqual", "In", "InSet", "IsNull", "IsNotNull", "Add", "Subtract", "Multiply",
        "Divide", "Remainder", "Pmod", "IntegralDivide", "UnaryMinus", "UnaryPositive", "Abs", "RLike", "Like",
        "ILike", "StringInstr", "StringLocate", "Contains", "StartsWith", "EndsWith", "ArrayContains",
        "Md5", "Sha1", "Sha2", "Crc32", "Murmur3Hash", "XxHash64", "NamedLambdaVariable", "LambdaFunction",
        "RegExpExtract", "RegExpExtractAll", "StringSplit", "SubstringIndex", "ArrayDistinct", "Slice",
        "Flatten", "ArrayUnion", "ArrayExcept", "ArrayIntersect", "ArrayMin", "ArrayMax", "Count", "Sum", "Min",
        "Max", "Average", "First", "Last", "AggregateExpression", "KnownNotNull", "KnownFloatingPointNormalized",
        "NormalizeNaNAndZero", "TimeWindow", "PreciseTimestampConversion", "EventTimeWatermark", "ScalarSubquery",
        "Exists", "ListQuery", "InSubquery", "UnBase64", "Unhex", "FromJson", "JsonToStructs", "GetJsonObject",
        "Nvl", "Nvl2", "IfNull", "NullIf", "Round", "BRound", "Floor", "Ceil", "DateAdd", "DateSub",
        "DateFormatClass", "ToUnixTimestamp", "UnixTimestamp", "FromUnixTime", "ParseToDate", "ParseToTimestamp",
        "WindowTime", "SortOrder", "Ascending", "Descending", "ArrayPosition", "MapKeys", "MapValues",
        "GetTimestamp", "CurrentTimestamp", "Now", "CurrentDate");

    /** aggregate(array, zero, merge[, finish]): a merge that uses the accumulator k times can
     *  multiply it by k at each element (k^n); once, it grows by what one merge adds. */
    private long aggregate(List<Expression> args, List<Long> sizes) {
      long elements = sizes.get(0);
      long zero = sizes.get(1);
      Expression merge = args.get(2);
      long uses = 1;
      if (merge instanceof LambdaFunction) {
        LambdaFunction lambda = (LambdaFunction) merge;
        List<?> params = CollectionConverters.asJava(lambda.arguments());
        if (!params.isEmpty() && params.get(0) instanceof NamedLambdaVariable) {
          uses = uses(lambda.function(), ((NamedLambdaVariable) params.get(0)).exprId());
        }
      }
      if (uses >= 2) {
        long bound = Math.max(zero, 1);
        for (long i = 0; i < elements && bound < Long.MAX_VALUE; i++) {
          bound = mul(bound, uses);
        }
        return bound;
      }
      return add(zero, mul(elements, sizes.get(2)));
    }

    private long uses(Expression e, Object exprId) {
      if (scalar(e)) {
        return 0;  // length(acc), acc = 'x'...: one value, not the accumulator's size
      }
      long n = e instanceof NamedLambdaVariable && ((NamedLambdaVariable) e).exprId().equals(exprId) ? 1 : 0;
      for (Object child : CollectionConverters.asJava(e.children())) {
        n += uses((Expression) child, exprId);
      }
      String cls = e.getClass().getSimpleName();
      if (n > 0 && !(e instanceof NamedLambdaVariable) && !NO_GROWTH.contains(cls)) {
        return Math.max(n, 2);  // inside something that may multiply it (repeat(acc, 2), hex(acc)...)
      }
      return n;
    }

    private long higherOrder(List<Long> sizes) {
      long elements = 1;
      long body = 1;
      for (int i = 0; i < sizes.size(); i++) {
        if (i == 0) {
          elements = sizes.get(i);
        } else {
          body = Math.max(body, sizes.get(i));
        }
      }
      return mul(elements, body);
    }

    /** Whether a constant argument could build more than the cap (it and all it reads are
     *  bounded), refused then: it is never evaluated. */
    private boolean tooBig(Expression e, Expression arg) {
      long size = expression(arg);
      if (size > maxConstant || !refusals.isEmpty()) {
        if (refusals.isEmpty()) {
          refuse(e, "an argument would build about " + size + " characters or elements from its constants "
              + "before it is used; an expression may build at most " + maxConstant + " from its constants");
        }
        return true;
      }
      return false;
    }

    /** A count argument's value when it is a constant (refused beyond the cap), else 0. */
    private long count(Expression e, Expression arg, String what) {
      if (!constant(arg)) {
        return 0;
      }
      if (tooBig(e, arg)) {
        return 0;
      }
      Object v = evaluate(arg);
      if (!(v instanceof Number)) {
        return 0;
      }
      long n = ((Number) v).longValue();
      if (Math.abs(n) > maxCount) {
        refuse(e, what + " is " + n + "; a constant count, length or position may be at most " + maxCount);
      }
      return n;
    }

    private long sequence(Expression e, List<Expression> args) {
      for (Expression a : args) {
        if (!constant(a)) {
          return 0;  // at run time, per row
        }
      }
      for (Expression a : args) {
        if (tooBig(e, a)) {
          return 0;
        }
      }
      Object start = evaluate(args.get(0));
      Object stop = evaluate(args.get(1));
      Object step = args.size() > 2 ? evaluate(args.get(2)) : null;
      if (!(start instanceof Number) || !(stop instanceof Number)) {
        return 0;
      }
      double from = ((Number) start).doubleValue();
      double to = ((Number) stop).doubleValue();
      String type = args.get(0).dataType().typeName();
      boolean date = "date".equals(type);
      boolean time = type.startsWith("timestamp");
      double by;
      if (step == null) {
        by = to >= from ? 1 : -1;
        if (time) {
          by *= 86_400_000_000.0;  // Spark's default: one day
        }
      } else if (step instanceof CalendarInterval) {
        CalendarInterval i = (CalendarInterval) step;
        double micros = i.months * 28.0 * 86_400_000_000.0 + i.days * 86_400_000_000.0 + i.microseconds;
        by = date ? micros / 86_400_000_000.0 : micros;
      } else if (step instanceof Number) {
        String stepType = args.get(2).dataType().typeName();
        double raw = ((Number) step).doubleValue();
        if (stepType.startsWith("interval year") || stepType.startsWith("interval month")) {
          raw = raw * 28.0 * 86_400_000_000.0;  // months
        }
        by = date && !args.get(2).dataType().sameType(args.get(0).dataType())
            && stepType.startsWith("interval") ? raw / 86_400_000_000.0 : raw;
      } else {
        return 0;
      }
      if (by == 0 || Double.isNaN(by)) {
        return 0;  // Spark refuses a zero step itself
      }
      double n = Math.floor((to - from) / by) + 1;
      if (n > maxCount) {
        long shown = n > Long.MAX_VALUE ? Long.MAX_VALUE : (long) n;
        refuse(e, "it would have " + shown + " elements; a constant sequence may have at most " + maxCount);
      }
      return n < 0 ? 0 : (long) Math.min(n, Long.MAX_VALUE);
    }

    private static final Pattern WIDTH = Pattern.compile("%[^a-zA-Z%]*?(\\d+)(?:\\.(\\d+))?");

    /** The widest field a constant printf/format_string format asks for. */
    private long formatWidth(Expression e, Expression format) {
      if (!constant(format) || tooBig(e, format)) {
        return 0;
      }
      Object v = evaluate(format);
      if (v == null) {
        return 0;
      }
      Matcher m = WIDTH.matcher(v.toString());
      long widest = 0;
      while (m.find()) {
        for (int g = 1; g <= 2; g++) {
          String digits = m.group(g);
          if (digits == null) {
            continue;
          }
          long n = digits.length() > 12 ? Long.MAX_VALUE : Long.parseLong(digits);
          widest = Math.max(widest, n);
        }
      }
      if (widest > maxCount) {
        refuse(e, "its format asks for a field " + widest + " characters wide; at most " + maxCount);
      }
      return widest;
    }

    /** A regex or LIKE pattern given as a constant: evaluated (its size is checked) and kept. */
    private void regex(Expression e) {
      String cls = e.getClass().getSimpleName();
      List<Expression> args = CollectionConverters.asJava(e.children());
      List<Expression> patterns = new ArrayList<>();
      boolean like = false;
      switch (cls) {
        case "RLike":
        case "RegExpExtract":
        case "RegExpExtractAll":
        case "RegExpReplace":
        case "RegExpInStr":
        case "StringSplit":
          patterns.add(args.get(1));
          break;
        case "StringToMap":
          patterns.addAll(args.subList(1, args.size()));
          break;
        case "Like":
          patterns.add(args.get(1));
          like = true;
          break;
        case "ScalaUDF":
          if (args.size() == 4 && "__DartContains4".equalsIgnoreCase(name(e))) {
            patterns.add(args.get(2));
          }
          break;
        default:
          return;
      }
      for (Expression p : patterns) {
        if (!constant(p) || tooBig(e, p)) {
          continue;
        }
        Object v = evaluate(p);
        if (v == null) {
          continue;
        }
        String text = v.toString();
        if (like) {
          char escape = '\\';
          try {
            escape = ((org.apache.spark.sql.catalyst.expressions.Like) e).escapeChar();
          } catch (RuntimeException ignored) {
            // the default
          }
          text = likeToRegex(text, escape);
        }
        regexes.add(item("regex", name(e), text));
      }
    }
  }

  /** A LIKE pattern as the regex Spark matches it with ('%' any text, '_' one character). */
  static String likeToRegex(String pattern, char escape) {
    StringBuilder out = new StringBuilder("(?s)");
    for (int i = 0; i < pattern.length(); i++) {
      char c = pattern.charAt(i);
      if (c == escape && i + 1 < pattern.length()) {
        out.append(Pattern.quote(String.valueOf(pattern.charAt(++i))));
      } else if (c == '%') {
        out.append(".*");
      } else if (c == '_') {
        out.append('.');
      } else {
        out.append(Pattern.quote(String.valueOf(c)));
      }
    }
    return out.toString();
  }

  private static long size(Object v) {
    if (v == null) {
      return 0;
    }
    if (v instanceof UTF8String) {
      return ((UTF8String) v).numChars();
    }
    if (v instanceof byte[]) {
      return ((byte[]) v).length;
    }
    if (v instanceof ArrayData) {
      return ((ArrayData) v).numElements();
    }
    if (v instanceof MapData) {
      return ((MapData) v).numElements();
    }
    return 1;
  }

  private static long add(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }

  private static long mul(long a, long b) {
    if (a == 0 || b == 0) {
      return 0;
    }
    return a > Long.MAX_VALUE / b ? Long.MAX_VALUE : a * b;
  }

  // ------------------------------------------------------------------ which constant fails

  /**
   * After constant folding failed: the innermost constant expression of the plan whose evaluation
   * throws, as {function, message}, or an empty array. Only called once {@link #check} accepted
   * the plan, so every constant is known to be small.
   */
  public static String[] failingConstant(LogicalPlan analyzed) {
    List<Expression> all = new ArrayList<>();
    collect(analyzed, all, new IdentityHashMap<>());
    for (Expression e : all) {  // children before parents
      if (e instanceof Literal || !constant(e)) {
        continue;
      }
      try {
        evaluate(e);
      } catch (Throwable t) {
        if (t instanceof VirtualMachineError && !(t instanceof StackOverflowError)) {
          throw (VirtualMachineError) t;
        }
        String message = t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
        return new String[] {name(e), message, e.sql()};
      }
    }
    return new String[0];
  }

  private static void collect(LogicalPlan p, List<Expression> out, Map<Object, Boolean> seen) {
    if (seen.put(p, Boolean.TRUE) != null) {
      return;
    }
    for (Expression e : CollectionConverters.asJava(p.expressions())) {
      collect(e, out, seen);
    }
    for (Object child : CollectionConverters.asJava(p.children())) {
      collect((LogicalPlan) child, out, seen);
    }
    for (Object inner : CollectionConverters.asJava(p.innerChildren())) {
      if (inner instanceof LogicalPlan) {
        collect((LogicalPlan) inner, out, seen);
      }
    }
  }

  private static void collect(Expression e, List<Expression> out, Map<Object, Boolean> seen) {
    if (seen.put(e, Boolean.TRUE) != null) {
      return;
    }
    if (e instanceof PlanExpression && ((PlanExpression<?>) e).plan() instanceof LogicalPlan) {
      collect((LogicalPlan) ((PlanExpression<?>) e).plan(), out, seen);
    }
    for (Object child : CollectionConverters.asJava(e.children())) {
      collect((Expression) child, out, seen);
    }
    out.add(e);
  }

  // ------------------------------------------------------------------ regexes under a budget

  /** A text whose every read counts as one step of the regex engine; past the budget it throws. */
  private static final class Budgeted implements CharSequence {
    final String text;
    final long[] steps;
    final long budget;

    Budgeted(String text, long[] steps, long budget) {
      this.text = text;
      this.steps = steps;
      this.budget = budget;
    }

    @Override
    public int length() {
      return text.length();
    }

    @Override
    public char charAt(int index) {
      if (++steps[0] > budget) {
        throw new OverBudget();
      }
      return text.charAt(index);
    }

    @Override
    public CharSequence subSequence(int start, int end) {
      return new Budgeted(text.substring(start, end), steps, budget);
    }

    @Override
    public String toString() {
      return text;
    }
  }

  private static final class OverBudget extends RuntimeException {
    private static final long serialVersionUID = 1L;

    OverBudget() {
      super(null, null, false, false);
    }
  }

  /**
   * Null when the regex runs within {@code budget} steps on every pumped text of {@code length}
   * characters (each character the regex names, and each pair of neighbours, repeated, then one
   * that breaks the match), else the text that took longer. A regex Java cannot compile is left
   * to the function's own error.
   */
  public static String regexProblem(String regex, int length, long budget) {
    Pattern pattern;
    try {
      pattern = Pattern.compile(regex);
    } catch (RuntimeException e) {
      return null;
    }
    Set<String> units = new LinkedHashSet<>();
    for (String c : new String[] {"a", "0", " ", ",", ".", "-", "_", "A", "\n", "/", ":"}) {
      units.add(c);
    }
    StringBuilder literal = new StringBuilder();
    for (int i = 0; i < regex.length() && units.size() < 64; i++) {
      char c = regex.charAt(i);
      if (Character.isLetterOrDigit(c) || " ,.-_/:;@#=&'\"".indexOf(c) >= 0) {
        units.add(String.valueOf(c));
        literal.append(c);
        if (literal.length() >= 2) {
          units.add(literal.substring(literal.length() - 2));
        }
      } else {
        literal.setLength(0);
      }
    }
    String[] ends = {"", "!", "\u0000", "\n"};
    long[] steps = new long[1];
    StringBuilder prefix = new StringBuilder();  // what the regex must start with: ^q(a...) needs "q"
    for (int i = regex.startsWith("^") ? 1 : 0; i < regex.length() && prefix.length() < 64; i++) {
      char c = regex.charAt(i);
      boolean quantified = i + 1 < regex.length() && "*+?{".indexOf(regex.charAt(i + 1)) >= 0;
      if (!Character.isLetterOrDigit(c) || quantified) {
        break;
      }
      prefix.append(c);
    }
    for (String unit : units) {
      StringBuilder pumped = new StringBuilder(prefix);
      while (pumped.length() < length) {
        pumped.append(unit);
      }
      for (String end : ends) {
        String text = pumped + end;
        for (int mode = 0; mode < 2; mode++) {
          steps[0] = 0;
          try {
            Matcher m = pattern.matcher(new Budgeted(text, steps, budget));
            if (mode == 0) {
              m.matches();
            } else {
              m.find();
            }
          } catch (OverBudget e) {
            return text;
          } catch (StackOverflowError e) {
            return text;
          } catch (RuntimeException e) {
            // not the budget: the engine's own problem, not a slow regex
          }
        }
      }
    }
    return null;
  }

  // ------------------------------------------------------------------ the optimizer under a time budget

  /**
   * Spark's optimizer on an analysed plan, in a thread of its own, for at most {@code millis}:
   * the optimized plan, or a TimeoutException when constant folding (or anything else) took
   * longer; that thread is then stopped, as nothing else would end a regex or a loop that runs
   * for hours in the driver.
   */
  @SuppressWarnings({"deprecation", "removal"})
  public static LogicalPlan optimize(SparkSession spark, LogicalPlan analyzed, long millis) throws Exception {
    return budgeted(() -> spark.sessionState().optimizer().execute(analyzed), millis,
        "Spark took longer than " + (millis / 1000.0) + " s to evaluate the query's constant expressions");
  }

  /** How much longer than its CPU budget a check may take by the clock (a thread that waits, not computes). */
  static final long WALL_FACTOR = 10;

  /**
   * work() in a thread of its own for at most millis of that thread's CPU time (what "cheap to
   * compute" means: a busy machine slows the clock, not the cost), and at most WALL_FACTOR times
   * that by the clock; else a TimeoutException saying timeout.
   */
  @SuppressWarnings({"deprecation", "removal", "unchecked"})
  static <T> T budgeted(java.util.concurrent.Callable<T> work, long millis, String timeout) throws Exception {
    AtomicReference<Object> result = new AtomicReference<>();
    Thread worker = new Thread(() -> {
      try {
        result.set(work.call());
      } catch (Throwable t) {
        result.set(t);
      }
    }, "dagger-constant-folding");
    worker.setDaemon(true);
    java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
    boolean cpuTimed = threads.isThreadCpuTimeSupported() && threads.isThreadCpuTimeEnabled();
    long began = System.nanoTime();
    worker.start();
    long budgetNanos = millis * 1_000_000L;
    while (worker.isAlive()) {
      worker.join(Math.max(1, Math.min(millis, 50)));
      long cpu = cpuTimed ? threads.getThreadCpuTime(worker.getId()) : -1;
      long wall = System.nanoTime() - began;
      if (cpu >= budgetNanos || wall >= (cpuTimed ? WALL_FACTOR : 1) * budgetNanos) {
        break;
      }
    }
    if (worker.isAlive()) {
      worker.interrupt();
      try {
        worker.stop();
      } catch (Throwable ignored) {
        // Java 20+: a thread cannot be stopped; it is left to end on its own
      }
      throw new java.util.concurrent.TimeoutException(timeout);
    }
    Object out = result.get();
    if (out instanceof Exception) {
      throw (Exception) out;
    }
    if (out instanceof Error) {
      throw (Error) out;
    }
    return (T) out;
  }
}
