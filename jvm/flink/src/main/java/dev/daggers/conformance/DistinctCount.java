package dev.daggers.conformance;

import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.FunctionHint;
import org.apache.flink.table.functions.AggregateFunction;

import java.util.HashSet;

/**
 * raystack/dagger's DistinctCount(string): the exact number of distinct non-null values in a
 * group, an INT. Registered on Flink so the seeds' queries run there as written.
 */
@FunctionHint(accumulator = @DataTypeHint(value = "RAW", bridgedTo = HashSet.class), output = @DataTypeHint("INT"))
public final class DistinctCount extends AggregateFunction<Integer, HashSet<String>> {
  @Override
  public HashSet<String> createAccumulator() {
    return new HashSet<>();
  }

  public void accumulate(HashSet<String> seen, String value) {
    if (value != null) seen.add(value);
  }

  @Override
  public Integer getValue(HashSet<String> seen) {
    return seen.size();
  }
}
