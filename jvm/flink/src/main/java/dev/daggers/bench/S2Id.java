package dev.daggers.bench;

import com.google.common.geometry.S2CellId;
import com.google.common.geometry.S2LatLng;
import org.apache.flink.table.functions.ScalarFunction;

/**
 * raystack/dagger's S2Id(lat, lng, level): the level's S2 cell id as Java's Long.toString, over
 * Google's Java S2 library, so the bench's Flink job runs the seed query as written.
 */
public final class S2Id extends ScalarFunction {
  public String eval(Double lat, Double lng, Integer level) {
    if (lat == null || lng == null || level == null) return null;
    return Long.toString(S2CellId.fromLatLng(S2LatLng.fromDegrees(lat, lng)).parent(level).id());
  }
}
