package dev.daggers.runtime.udf;

import org.apache.spark.sql.api.java.UDF2;

/**
 * {@code JsonDelete(json STRING, path STRING) -> STRING}: raystack/dagger's JsonDelete,
 * {@code parse(json).delete(path).jsonString()}. Deleting an array element shifts the rest;
 * {@code $..*} empties the document; deleting a missing leaf leaves it unchanged.
 *
 * <p>Unlike dagger (which throws), a row it cannot handle gives NULL: null or malformed JSON, a path
 * through a non-container or a missing intermediate object, a null, empty or malformed path.
 */
public class JsonDelete implements UDF2<Object, String, String> {
  private static final long serialVersionUID = 1L;
  private transient volatile JsonPaths.Compiled last;

  public JsonDelete() {}

  @Override
  public String call(Object json, String path) {
    String text = JsonPaths.text(json);
    if (text == null || path == null) {
      return null;
    }
    try {
      JsonPaths.Compiled compiled = JsonPaths.compile(last, path);
      last = compiled;
      return JsonPaths.delete(text, compiled.path);
    } catch (Exception | StackOverflowError e) {
      return null;
    }
  }
}
