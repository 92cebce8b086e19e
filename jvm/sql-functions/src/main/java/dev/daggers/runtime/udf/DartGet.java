package dev.daggers.runtime.udf;

import java.util.Map;
import org.apache.spark.sql.api.java.UDF4;

/**
 * {@code DartGet(collection STRING, key STRING, refreshHours INT, defaultValue STRING) -> STRING}:
 * raystack/dagger's DartGet in its 4-argument form; the SQL translator rewrites dagger's 3-argument
 * {@code DartGet(c, k, h)} into {@code (c, k, h, NULL)}.
 *
 * <p>Looks {@code key} up in the JSON object {@code <base>/dart-get/<collection>} (see
 * {@link DartStore} for the base URL, the per-JVM cache and refreshHours). A key present with a
 * JSON null value gives NULL.
 *
 * <p>A missing key (or a NULL key) gives {@code defaultValue}, which is NULL in the 3-argument form.
 * Dagger's 3-argument form throws KeyDoesNotExistException and fails the job instead; we
 * deliberately do not fail a streaming job because one event carries an unknown key.
 *
 * <p>A NULL collection name gives NULL. A missing or malformed reference file, or an unset base,
 * throws (a deployment error).
 */
public class DartGet implements UDF4<Object, Object, Object, Object, String> {
  private static final long serialVersionUID = 1L;

  public DartGet() {}

  @Override
  public String call(Object collection, Object key, Object refreshHours, Object defaultValue) {
    String name = DartStore.text(collection);
    if (name == null) {
      return null;
    }
    String fallback = DartStore.text(defaultValue);
    Map<String, String> map = DartStore.map(name, DartStore.hours(refreshHours));
    String k = DartStore.text(key);
    if (k == null || !map.containsKey(k)) {
      return fallback;
    }
    return map.get(k);
  }
}
