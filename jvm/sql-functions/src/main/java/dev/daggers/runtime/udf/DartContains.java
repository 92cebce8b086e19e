package dev.daggers.runtime.udf;

import org.apache.spark.sql.api.java.UDF4;

/**
 * {@code DartContains(list STRING, field STRING, regex STRING, refreshHours INT) -> BOOLEAN}:
 * raystack/dagger's DartContains in one normalised 4-argument form. The SQL translator rewrites
 * dagger's shorter forms:
 * <ul>
 *   <li>{@code DartContains(l, f)} -> {@code (l, f, NULL, 1)}</li>
 *   <li>{@code DartContains(l, f, hours INT)} -> {@code (l, f, NULL, hours)}</li>
 *   <li>{@code DartContains(l, f, regex STRING)} -> {@code (l, f, regex, 1)}</li>
 * </ul>
 *
 * <p>A NULL regex means plain set membership, {@code set.contains(field)} (dagger's forms without a
 * regex). Otherwise true iff some element {@code s} of {@code <base>/dart-contains/<list>}'s
 * {@code "data"} array satisfies {@code Pattern.matches(String.format(regex, s), field)}: a full,
 * case-sensitive match, with {@code %s} replaced by the raw element (not quoted). Note that a
 * regex of {@code '%s'} is not the same as membership when elements contain regex metacharacters.
 *
 * <p>A NULL field gives false (dagger: false for membership, an NPE for the regex form); a NULL list
 * name gives NULL. A regex that cannot work for any element ({@link DartStore#checkRegex}), a
 * missing or malformed reference file, or an unset base throw.
 */
public class DartContains implements UDF4<Object, Object, String, Object, Boolean> {
  private static final long serialVersionUID = 1L;

  public DartContains() {}

  @Override
  public Boolean call(Object list, Object field, String regex, Object refreshHours) {
    String name = DartStore.text(list);
    if (name == null) {
      return null;
    }
    DartStore.Entry entry = DartStore.list(name, DartStore.hours(refreshHours));
    String value = DartStore.text(field);
    if (value == null) {
      return false;
    }
    return regex == null ? entry.set.contains(value) : entry.matches(value, regex);
  }
}
