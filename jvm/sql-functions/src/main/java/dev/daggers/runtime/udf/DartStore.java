package dev.daggers.runtime.udf;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.internal.SQLConf;
import scala.Tuple2;

/**
 * Reference data for DartGet / DartContains, laid out as raystack/dagger lays it out in its GCS
 * bucket: {@code <base>/dart-get/<name>} holds a JSON object of strings ({@code {"k":"v",...}}) and
 * {@code <base>/dart-contains/<name>} holds {@code {"data":["v1","v2",...]}}.
 *
 * <p><b>Where the base comes from.</b> The Spark conf {@value #BASE_KEY}, e.g.
 * {@code gs://my-bucket} (what dagger's {@code UDF_DART_GCS_BUCKET_ID} named) or
 * {@code file:///srv/dart}. It is looked up on every call, in this order:
 * <ol>
 *   <li>the running task's local properties: Spark copies every {@code spark.*} setting of the
 *       session's SQL conf into them for each query it runs (SQLExecution.withSQLConfPropagated),
 *       so this sees both {@code --conf}/builder settings and {@code spark.conf.set(...)} made at
 *       run time, on executors in a cluster as well as in local mode;</li>
 *   <li>{@code SQLConf.get()}: the active session's conf when a call runs on the driver outside a
 *       task (e.g. the optimiser folding a one-row local relation);</li>
 *   <li>{@code SparkEnv.get().conf()}: the application's SparkConf (set at submit time), which every
 *       executor receives;</li>
 *   <li>a JVM system property of the same name.</li>
 * </ol>
 * Files are read with Hadoop's FileSystem API ({@code new Path(url).getFileSystem(conf)}), so any
 * scheme with a FileSystem on the classpath works: {@code file://} here, {@code gs://} where the GCS
 * connector is installed, {@code hdfs://}, {@code s3a://}. The Hadoop Configuration is a
 * {@code new Configuration()} plus the application's {@code spark.hadoop.*} settings (credentials,
 * project ids), as Spark does for its own Hadoop reads.
 *
 * <p><b>Cache.</b> One per JVM (static; shared by every task and UDF instance in an executor),
 * keyed by base + kind + name. An entry is reloaded when the call's refreshHours have passed since
 * it was loaded; refreshHours {@code <= 0} reloads on every call (dagger: a refresh of 0 or less
 * expires at once). Dagger also reloads a collection that is empty on every call, a workaround for
 * its turning an unreadable file into an empty set; here an unreadable file is an error, so an empty
 * collection is cached like any other.
 *
 * <p><b>Errors.</b> No base configured, a missing object, an unreadable or malformed file, or a bad
 * collection name throw an exception naming the URL: a missing reference file is a deployment
 * error, and failing loudly beats answering every row wrongly. (Dagger: a missing object is fatal
 * too; a malformed DartGet file gives an NPE on lookup, a malformed DartContains file an empty
 * set.)
 */
public final class DartStore {
  private DartStore() {}

  /** The Spark conf key holding the reference data's base URL. */
  public static final String BASE_KEY = "spark.dagger.dart.base";

  static final String GET = "dart-get";
  static final String CONTAINS = "dart-contains";

  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final long HOUR_MS = 3_600_000L;
  private static final int MAX_REGEXES_PER_LIST = 32;

  /** Loaded collections, keyed by base + kind + name. */
  private static final ConcurrentHashMap<String, Entry> CACHE = new ConcurrentHashMap<>();

  static final class Entry {
    final long loadedAtMs;
    final Map<String, String> map; // dart-get
    final Set<String> set; // dart-contains
    /** Per regex: the set's elements already formatted into compiled patterns. */
    final ConcurrentHashMap<String, Pattern[]> patterns = new ConcurrentHashMap<>();

    Entry(long loadedAtMs, Map<String, String> map, Set<String> set) {
      this.loadedAtMs = loadedAtMs;
      this.map = map;
      this.set = set;
    }

    /** dagger's Cache.hasExpired: now after loadedAt + refreshHours; refresh <= 0 = always. */
    boolean expired(int refreshHours, long nowMs) {
      return refreshHours <= 0 || nowMs > loadedAtMs + refreshHours * HOUR_MS;
    }

    /**
     * dagger's SetCache.matches: {@code Pattern.matches(String.format(regex, element), field)} for
     * any element. The patterns are compiled once per (regex, collection load) and reused.
     *
     * <p>A regex that is unusable whatever the element (a bad format or regex, see
     * {@link DartStore#checkRegex}) throws. An element that makes an otherwise good regex invalid
     * (it is substituted raw, e.g. "a(b") can never match and is skipped; dagger threw when it
     * reached such an element before finding a match.
     */
    boolean matches(String field, String regex) {
      Pattern[] compiled = patterns.get(regex);
      if (compiled == null) {
        String problem = checkRegex(regex);
        if (problem != null) {
          throw new IllegalArgumentException("DartContains: bad regex \"" + regex + "\": " + problem);
        }
        List<Pattern> list = new ArrayList<>(set.size());
        for (String element : set) {
          try {
            list.add(Pattern.compile(String.format(regex, element)));
          } catch (RuntimeException e) {
            // this element cannot form a valid pattern: it matches nothing
          }
        }
        compiled = list.toArray(new Pattern[0]);
        if (patterns.size() < MAX_REGEXES_PER_LIST) {
          patterns.putIfAbsent(regex, compiled);
        }
      }
      for (Pattern p : compiled) {
        if (p.matcher(field).matches()) {
          return true;
        }
      }
      return false;
    }
  }

  // ------------------------------------------------------------------ lookups used by the UDFs

  static Map<String, String> map(String name, int refreshHours) {
    return entry(GET, name, refreshHours).map;
  }

  static Entry list(String name, int refreshHours) {
    return entry(CONTAINS, name, refreshHours);
  }

  private static Entry entry(String kind, String name, int refreshHours) {
    String base = base();
    String key = base + '\u0000' + kind + '\u0000' + name;
    long now = System.currentTimeMillis();
    Entry cached = CACHE.get(key);
    if (cached != null && !cached.expired(refreshHours, now)) {
      return cached;
    }
    // Loads outside any lock: two tasks may both load an expired entry; the later one wins.
    Entry fresh = load(base, kind, name);
    CACHE.put(key, fresh);
    return fresh;
  }

  /** Drops every cached collection (tests, or a driver that knows the files changed). */
  public static void clearCache() {
    CACHE.clear();
  }

  // ------------------------------------------------------------------ configuration

  /** The configured base URL, without a trailing slash; throws if none is set. */
  public static String base() {
    String base = null;
    TaskContext task = TaskContext.get();
    if (task != null) {
      base = task.getLocalProperty(BASE_KEY);
    }
    if (blank(base)) {
      try {
        base = SQLConf.get().getConfString(BASE_KEY, null);
      } catch (RuntimeException | LinkageError e) {
        base = null;
      }
    }
    if (blank(base)) {
      SparkEnv env = SparkEnv.get();
      if (env != null) {
        base = env.conf().get(BASE_KEY, null);
      }
    }
    if (blank(base)) {
      base = System.getProperty(BASE_KEY);
    }
    if (blank(base)) {
      throw new IllegalStateException("DartGet/DartContains: the Spark conf " + BASE_KEY
          + " is not set; set it to the reference data's base URL (e.g. gs://bucket or"
          + " file:///dir) holding dart-get/<name> and dart-contains/<name>");
    }
    base = base.trim();
    while (base.endsWith("/") && !base.endsWith(":/") && !base.endsWith("://")) {
      base = base.substring(0, base.length() - 1);
    }
    return base;
  }

  private static boolean blank(String s) {
    return s == null || s.trim().isEmpty();
  }

  /**
   * A collection name is a relative object name under dart-get/ or dart-contains/. Slashes are
   * allowed (GCS "folders"), but no empty, "." or ".." segments, no leading slash, no ':' or '\'
   * and no control characters: SQL must not reach files outside the reference data.
   */
  static String checkName(String name) {
    if (name == null || name.isEmpty()) {
      return "the collection name is empty";
    }
    if (name.startsWith("/")) {
      return "the collection name \"" + name + "\" starts with '/'";
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c < 0x20 || c == 0x7f || c == ':' || c == '\\') {
        return "the collection name \"" + name + "\" contains a forbidden character";
      }
    }
    for (String segment : name.split("/", -1)) {
      if (segment.isEmpty() || segment.equals(".") || segment.equals("..")) {
        return "the collection name \"" + name + "\" has an empty, '.' or '..' path segment";
      }
    }
    return null;
  }

  /**
   * Null if {@code regex} is usable as DartContains' regex (a {@code String.format} pattern with one
   * {@code %s} that then compiles as a Java regex for a sample element), else the error message.
   * For validating literal regexes before a query runs.
   */
  public static String checkRegex(String regex) {
    if (regex == null) {
      return null;
    }
    try {
      Pattern.compile(String.format(regex, "x"));
      return null;
    } catch (RuntimeException e) {
      String message = e.getMessage();
      return e.getClass().getSimpleName() + (message == null ? "" : ": " + message);
    }
  }

  // ------------------------------------------------------------------ loading

  static String url(String base, String kind, String name) {
    return base + "/" + kind + "/" + name;
  }

  private static Entry load(String base, String kind, String name) {
    String problem = checkName(name);
    if (problem != null) {
      throw new IllegalArgumentException((GET.equals(kind) ? "DartGet: " : "DartContains: ") + problem);
    }
    String url = url(base, kind, name);
    String text = read(url);
    long now = System.currentTimeMillis();
    if (GET.equals(kind)) {
      return new Entry(now, parseMap(url, text), null);
    }
    return new Entry(now, null, parseSet(url, text));
  }

  private static String read(String url) {
    try {
      Path path = new Path(url);
      FileSystem fs = path.getFileSystem(hadoopConf());
      try (InputStream in = fs.open(path)) {
        return new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
    } catch (FileNotFoundException e) {
      throw new IllegalStateException("DART reference data not found: " + url
          + " (base from " + BASE_KEY + ")", e);
    } catch (IOException | RuntimeException e) {
      throw new IllegalStateException("DART reference data could not be read: " + url + ": " + e, e);
    }
  }

  private static Configuration hadoopConf() {
    Configuration conf = new Configuration();
    SparkEnv env = SparkEnv.get();
    if (env != null) {
      SparkConf sparkConf = env.conf();
      for (Tuple2<String, String> kv : sparkConf.getAll()) {
        if (kv._1().startsWith("spark.hadoop.")) {
          conf.set(kv._1().substring("spark.hadoop.".length()), kv._2());
        }
      }
    }
    return conf;
  }

  /** {"k":"v",...}; values must be strings (or null). Duplicate keys: the last wins (Jackson). */
  static Map<String, String> parseMap(String url, String text) {
    JsonNode root;
    try {
      root = MAPPER.readTree(text);
    } catch (IOException e) {
      throw new IllegalStateException("DART reference data " + url + " is not valid JSON: "
          + e.getMessage(), e);
    }
    if (root == null || !root.isObject()) {
      throw new IllegalStateException("DART reference data " + url
          + " must be a JSON object of strings ({\"key\": \"value\", ...})");
    }
    Map<String, String> map = new HashMap<>();
    Iterator<Map.Entry<String, JsonNode>> fields = root.fields();
    while (fields.hasNext()) {
      Map.Entry<String, JsonNode> field = fields.next();
      JsonNode value = field.getValue();
      if (value.isNull()) {
        map.put(field.getKey(), null);
      } else if (value.isTextual()) {
        map.put(field.getKey(), value.textValue());
      } else {
        throw new IllegalStateException("DART reference data " + url + ": the value of key \""
            + field.getKey() + "\" is not a string (" + value.getNodeType() + ")");
      }
    }
    return Collections.unmodifiableMap(map);
  }

  /** {"data":[...]}, read as dagger does (Jackson into ArrayList&lt;String&gt;, then a HashSet). */
  static Set<String> parseSet(String url, String text) {
    JsonNode root;
    try {
      root = MAPPER.readTree(text);
    } catch (IOException e) {
      throw new IllegalStateException("DART reference data " + url + " is not valid JSON: "
          + e.getMessage(), e);
    }
    JsonNode data = root != null && root.isObject() ? root.get("data") : null;
    if (data == null || !data.isArray()) {
      throw new IllegalStateException("DART reference data " + url
          + " must be a JSON object with a \"data\" array ({\"data\": [\"v1\", ...]})");
    }
    List<String> list;
    try {
      list = MAPPER.readValue(MAPPER.treeAsTokens(data), new TypeReference<ArrayList<String>>() {});
    } catch (IOException | IllegalArgumentException e) {
      throw new IllegalStateException("DART reference data " + url
          + ": \"data\" must be an array of strings: " + e.getMessage(), e);
    }
    return Collections.unmodifiableSet(new HashSet<>(list));
  }

  // ------------------------------------------------------------------ argument conversion

  /**
   * A key/field/name argument as text. Spark hands a Java UDF registered without input types the
   * column's own Java value, so a BIGINT key arrives as a Long: it is looked up as its decimal
   * text, like {@code CAST(x AS STRING)}.
   */
  static String text(Object value) {
    if (value == null || value instanceof String) {
      return (String) value;
    }
    if (value instanceof BigDecimal) {
      return ((BigDecimal) value).toPlainString();
    }
    if (value instanceof Number || value instanceof Boolean || value instanceof Character) {
      return value.toString();
    }
    if (value instanceof byte[]) {
      return new String((byte[]) value, StandardCharsets.UTF_8);
    }
    throw new IllegalArgumentException("expected a STRING argument, got " + value.getClass().getName());
  }

  /** refreshHours: any integral number; null means dagger's default of 1 hour. */
  static int hours(Object value) {
    if (value == null) {
      return 1;
    }
    if (value instanceof Number) {
      long hours = ((Number) value).longValue();
      return (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, hours));
    }
    if (value instanceof String) {
      try {
        return Integer.parseInt(((String) value).trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("refreshHours must be an integer, got \"" + value + "\"");
      }
    }
    throw new IllegalArgumentException("refreshHours must be an integer, got " + value.getClass().getName());
  }
}
