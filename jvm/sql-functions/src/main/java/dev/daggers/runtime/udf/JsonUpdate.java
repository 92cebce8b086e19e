package dev.daggers.runtime.udf;

import org.apache.spark.sql.api.java.UDF3;

/**
 * {@code JsonUpdate(json STRING, path STRING, newValue ANY) -> STRING}: raystack/dagger's
 * JsonUpdate, {@code parse(json).set(path, newValue).jsonString()}. It replaces the value at the
 * path or adds a missing leaf key to an existing object.
 *
 * <p>A Java UDF registered without input types accepts any argument type, so one registered name
 * covers dagger's {@code @DataTypeHint(inputGroup = ANY) Object newValue}: a STRING is set as a JSON
 * string, numbers and booleans as JSON numbers/booleans, a MAP (e.g. {@code map('key1','value1')})
 * or STRUCT as a nested object, an ARRAY as a JSON array, NULL as {@code null}.
 *
 * <p>Unlike dagger (which throws), a row it cannot handle gives NULL: null or malformed JSON, a path
 * through a non-container or a missing intermediate object, a null, empty or malformed path.
 */
public class JsonUpdate implements UDF3<Object, String, Object, String> {
  private static final long serialVersionUID = 1L;
  private transient volatile JsonPaths.Compiled last;

  public JsonUpdate() {}

  @Override
  public String call(Object json, String path, Object newValue) {
    String text = JsonPaths.text(json);
    if (text == null || path == null) {
      return null;
    }
    Object value = JsonPaths.jsonValue(newValue);
    try {
      JsonPaths.Compiled compiled = JsonPaths.compile(last, path);
      last = compiled;
      return JsonPaths.update(text, compiled.path, value);
    } catch (Exception | StackOverflowError e) {
      return null;
    }
  }
}
