package dev.daggers.runtime.udf;

import com.google.common.geometry.S2CellId;
import com.google.common.geometry.S2LatLng;
import org.apache.spark.sql.api.java.UDF3;

/**
 * {@code S2Id(lat DOUBLE, lng DOUBLE, level INT) -> STRING}: raystack/dagger's S2Id,
 * {@code Long.toString(S2CellId.fromLatLng(S2LatLng.fromDegrees(lat, lng)).parent(level).id())},
 * over Google's Java S2 library. In the JVM, inside the query's generated code: the vectorised
 * form (numpy over Arrow batches) cost the seed query a round trip to a Python worker a batch.
 *
 * <p>Any number is taken (Spark passes a Java UDF its arguments as they are: an INT latitude
 * arrives as an Integer). Where dagger throws or answers a meaningless cell, a row gives NULL: a
 * NULL or non-numeric argument, a NaN, a latitude outside [-90, 90], an infinite longitude, a
 * level that is not a whole number in 0..30. Longitudes outside [-180, 180] wrap, as in dagger.
 */
public class S2Id implements UDF3<Object, Object, Object, String> {
  private static final long serialVersionUID = 1L;

  public S2Id() {}

  @Override
  public String call(Object lat, Object lng, Object level) {
    if (!(lat instanceof Number) || !(lng instanceof Number) || !(level instanceof Number)) {
      return null;
    }
    double latitude = ((Number) lat).doubleValue();
    double longitude = ((Number) lng).doubleValue();
    double depth = ((Number) level).doubleValue();
    // NaN fails every comparison, so each test is written to pass only for a good value
    if (!(Math.abs(latitude) <= 90) || !Double.isFinite(longitude)
        || !(depth >= 0 && depth <= S2CellId.MAX_LEVEL && depth == Math.rint(depth))) {
      return null;
    }
    return Long.toString(S2CellId.fromLatLng(S2LatLng.fromDegrees(latitude, longitude)).parent((int) depth).id());
  }
}
