"""S2AreaInKm2 and GeoHash as Arrow (pandas) UDFs: one Python call per batch, numpy inside.
(S2Id runs in the JVM: dagger_runtime.udfs.java_udfs.)"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import geo_kernels as geo


def s2_area_km2(ids: pd.Series) -> pd.Series:
    """S2AreaInKm2(s2id): exact area of the cell in km2 (dagger's scaling); NULL for a bad id."""
    values, valid = geo.parse_cell_ids(ids)
    area = geo.s2_cell_area_km2(values)
    return pd.Series(np.where(valid & ~np.isnan(area), area, np.nan))


def geo_hash(lat: pd.Series, lng: pd.Series, length: pd.Series) -> pd.Series:
    """GeoHash(lat, lng, length): the standard base32 geohash of that many characters."""
    return pd.Series(geo.geohash(lat, lng, length), dtype=object)


def register(spark) -> None:
    from pyspark.sql.functions import pandas_udf
    from pyspark.sql.types import DoubleType, StringType

    spark.udf.register("S2AreaInKm2", pandas_udf(s2_area_km2, DoubleType()))
    spark.udf.register("GeoHash", pandas_udf(geo_hash, StringType()))
