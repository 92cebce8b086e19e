package dev.daggers.runtime.sink;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The InfluxDB sink's request bodies: a partition's lines of line protocol joined in the task that
 * made them, a body for each partition, or for each {@code size} lines of it. Where a GROUP BY of
 * the partition cost the batch a shuffle and a stage more.
 */
public final class LineBodies implements MapPartitionsFunction<Row, Row> {
  private static final long serialVersionUID = 1L;
  private static final StructType SCHEMA = new StructType()
      .add("body", DataTypes.StringType, false)
      .add("points", DataTypes.IntegerType, false);

  private final int size;

  private LineBodies(int size) {
    this.size = size;
  }

  /** (body, points) rows of the lines in the first column of `lines` (size 0: no limit a body). */
  public static Dataset<Row> of(Dataset<Row> lines, int size) {
    if (size < 0) throw new IllegalArgumentException("a body's size is 0 (no limit) or more, not " + size);
    return lines.mapPartitions(new LineBodies(size), Encoders.row(SCHEMA));
  }

  @Override
  public Iterator<Row> call(Iterator<Row> lines) {
    List<Row> bodies = new ArrayList<>();
    StringBuilder body = new StringBuilder();
    int points = 0;
    while (lines.hasNext()) {
      if (points > 0) body.append('\n');
      body.append(lines.next().getString(0));
      if (++points == size) {
        bodies.add(RowFactory.create(body.toString(), points));
        body.setLength(0);
        points = 0;
      }
    }
    if (points > 0) bodies.add(RowFactory.create(body.toString(), points));
    return bodies.iterator();
  }
}
