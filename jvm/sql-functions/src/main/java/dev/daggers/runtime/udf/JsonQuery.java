package dev.daggers.runtime.udf;

import org.apache.spark.sql.api.java.UDF2;

/**
 * {@code JsonQuery(json STRING, path STRING) -> STRING}: raystack/dagger's JsonQuery. The value at
 * the Jayway JsonPath, re-serialised with Jackson, so a string comes back JSON-quoted
 * ({@code "v2"} with the quotes) and an object/array as compact JSON text. A JSON null or a missing
 * leaf (DEFAULT_PATH_LEAF_TO_NULL) gives NULL.
 *
 * <p>Unlike dagger, which throws and fails the task, a row it cannot handle gives NULL: null or
 * malformed JSON, a path through a non-container ({@code $.k2.k4} on a string k2), a null, empty or
 * malformed path. Literal paths are checked before the query runs ({@link JsonPaths#check}).
 */
public class JsonQuery implements UDF2<Object, String, String> {
  private static final long serialVersionUID = 1L;
  private transient volatile JsonPaths.Compiled last;

  public JsonQuery() {}

  @Override
  public String call(Object json, String path) {
    String text = JsonPaths.text(json);
    if (text == null || path == null) {
      return null;
    }
    try {
      JsonPaths.Compiled compiled = JsonPaths.compile(last, path);
      last = compiled;
      return JsonPaths.query(text, compiled.path);
    } catch (Exception | StackOverflowError e) {
      return null;
    }
  }
}
