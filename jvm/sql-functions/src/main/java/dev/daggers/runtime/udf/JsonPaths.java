package dev.daggers.runtime.udf;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.jayway.jsonpath.Configuration;
import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import com.jayway.jsonpath.Option;
import com.jayway.jsonpath.PathNotFoundException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;

/**
 * What JsonQuery, JsonUpdate and JsonDelete share: raystack/dagger's JsonPath set-up
 * ({@code Configuration.defaultConfiguration().setOptions(Option.DEFAULT_PATH_LEAF_TO_NULL)}, the
 * default json-smart provider), plus {@link #check(String)} so that a literal path can be
 * rejected when the query is validated instead of turning every row into NULL.
 *
 * <p>Library version: dagger used json-path 2.4.0; we use a 2.9.x (2.4.0 pulls in json-smart 2.3,
 * which has known stack-exhaustion / unchecked-exception CVEs on crafted JSON). The two give the
 * same results for dagger's test vectors and for everything we compared, with one exception that
 * {@link #update} and {@link #delete} undo: since 2.7.0, set/delete on a path that matches nothing
 * (an array index past the end, a filter that selects nothing) throws a bare
 * {@code PathNotFoundException()}, where 2.4.0 left the document unchanged.
 *
 * <p>Errors: dagger throws, failing the task; every function here returns {@code null} (SQL NULL)
 * for a row it cannot handle instead (null or malformed JSON, a path that walks through a
 * non-container, a null or malformed path).
 */
public final class JsonPaths {
  private JsonPaths() {}

  static final Configuration CONF =
      Configuration.defaultConfiguration().setOptions(Option.DEFAULT_PATH_LEAF_TO_NULL);

  /** Thread-safe once configured; dagger re-serialises JsonQuery results with a plain ObjectMapper. */
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** Null if {@code path} compiles as a Jayway JsonPath, otherwise the error message. */
  public static String check(String path) {
    try {
      JsonPath.compile(path);
      return null;
    } catch (StackOverflowError e) {
      return "the path is nested too deeply to compile";
    } catch (Exception e) {
      String message = e.getMessage();
      return message == null || message.isEmpty() ? e.getClass().getSimpleName() : message;
    }
  }

  /** The compiled form of the last path a UDF instance saw (paths are nearly always literals). */
  static final class Compiled {
    final String source;
    final JsonPath path;

    Compiled(String source, JsonPath path) {
      this.source = source;
      this.path = path;
    }
  }

  static Compiled compile(Compiled last, String path) {
    if (last != null && last.source.equals(path)) {
      return last;
    }
    return new Compiled(path, JsonPath.compile(path));
  }

  /** JsonQuery: the value at the path as JSON text (strings come back quoted); JSON null -> null. */
  static String query(String json, JsonPath path) throws Exception {
    Object value = JsonPath.using(CONF).parse(json).read(path);
    return value == null ? null : MAPPER.writeValueAsString(value);
  }

  /** JsonUpdate: {@code parse(json).set(path, value).jsonString()}. */
  static String update(String json, JsonPath path, Object value) {
    DocumentContext doc = JsonPath.using(CONF).parse(json);
    try {
      doc.set(path, value);
    } catch (PathNotFoundException e) {
      if (e.getMessage() != null) {
        throw e;
      }
      // json-path >= 2.7 "nothing matched"; 2.4.0 (dagger) returned the document unchanged
    }
    return doc.jsonString();
  }

  /** JsonDelete: {@code parse(json).delete(path).jsonString()}. */
  static String delete(String json, JsonPath path) {
    DocumentContext doc = JsonPath.using(CONF).parse(json);
    try {
      doc.delete(path);
    } catch (PathNotFoundException e) {
      if (e.getMessage() != null) {
        throw e;
      }
    }
    return doc.jsonString();
  }

  /** A JSON argument: Spark passes STRING as String; BINARY (e.g. a Kafka value) is read as UTF-8. */
  static String text(Object value) {
    if (value == null || value instanceof String) {
      return (String) value;
    }
    if (value instanceof byte[]) {
      return new String((byte[]) value, StandardCharsets.UTF_8);
    }
    throw new IllegalArgumentException(
        "expected a STRING (or BINARY) JSON argument, got " + value.getClass().getName());
  }

  /**
   * A Spark value as the Java object dagger's Flink would have handed json-smart: MAP -> Map
   * (insertion order kept), ARRAY -> List, STRUCT -> Map by field name, DECIMAL -> BigDecimal,
   * STRING/numbers/booleans as they are. Anything else (dates, timestamps, binary) is set as its
   * string form.
   */
  static Object jsonValue(Object value) {
    if (value == null || value instanceof String || value instanceof Boolean
        || value instanceof Integer || value instanceof Long || value instanceof Double
        || value instanceof Float || value instanceof Short || value instanceof Byte
        || value instanceof BigDecimal || value instanceof java.math.BigInteger) {
      return value;
    }
    if (value instanceof scala.math.BigDecimal) {
      return ((scala.math.BigDecimal) value).bigDecimal();
    }
    if (value instanceof scala.collection.Map) {
      Map<String, Object> out = new LinkedHashMap<>();
      scala.collection.Iterator<?> it = ((scala.collection.Map<?, ?>) value).iterator();
      while (it.hasNext()) {
        scala.Tuple2<?, ?> kv = (scala.Tuple2<?, ?>) it.next();
        out.put(String.valueOf(kv._1()), jsonValue(kv._2()));
      }
      return out;
    }
    if (value instanceof Map) {
      Map<String, Object> out = new LinkedHashMap<>();
      for (Map.Entry<?, ?> kv : ((Map<?, ?>) value).entrySet()) {
        out.put(String.valueOf(kv.getKey()), jsonValue(kv.getValue()));
      }
      return out;
    }
    if (value instanceof scala.collection.Iterable) {
      List<Object> out = new ArrayList<>();
      scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) value).iterator();
      while (it.hasNext()) {
        out.add(jsonValue(it.next()));
      }
      return out;
    }
    if (value instanceof Iterable) {
      List<Object> out = new ArrayList<>();
      for (Object element : (Iterable<?>) value) {
        out.add(jsonValue(element));
      }
      return out;
    }
    if (value instanceof Row) {
      Row row = (Row) value;
      StructType schema = row.schema();
      Map<String, Object> out = new LinkedHashMap<>();
      for (int i = 0; i < row.length(); i++) {
        out.put(schema != null ? schema.fields()[i].name() : "_" + (i + 1), jsonValue(row.get(i)));
      }
      return out;
    }
    return value.toString();
  }
}
