"""Literals compared with enum fields are checked against the enum's values before anything runs
(dagger_runtime/enum_literals.py): a misspelt value or a number for an enum is valid SQL that
silently matches nothing, so a new analyst got 144 cancellations where there were 284."""

from __future__ import annotations

from pathlib import Path

import pytest

from dagger_runtime import enum_literals
from dagger_runtime.cli import main
from dagger_runtime.errors import QueryError
from dagger_runtime.sql import translate
from protos import registry

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "daggers"
DESCRIPTORS = registry.load(None, None)
TABLES = {
    "bookings": DESCRIPTORS.message_descriptor("gojek.esb.booking.BookingLogMessage"),
    "pings": DESCRIPTORS.message_descriptor("gojek.esb.driverlocation.DriverLocationLogMessage"),
}


def refusal(sql: str) -> QueryError | None:
    try:
        enum_literals.check(translate(sql, list(TABLES)), TABLES)
    except QueryError as e:
        return e
    return None


def test_the_enums_values_come_from_the_descriptors_not_from_this_test():
    status = TABLES["bookings"].fields_by_name["status"].enum_type
    assert "DRIVER_CANCELLED" in status.values_by_name and "DRIVER_CANCELED" not in status.values_by_name
    driver = TABLES["pings"].fields_by_name["driver_status"].enum_type
    assert driver.values_by_number[1].name == "AVAILABLE"


def test_a_misspelt_value_is_refused_at_its_place_with_the_closest_names():
    sql = (
        "SELECT COUNT(1) AS cancelled FROM bookings\n"
        "WHERE status IN ('CUSTOMER_CANCELLED', 'DRIVER_CANCELED')\n"
        "GROUP BY TUMBLE(rowtime, INTERVAL '1' MINUTE)"
    )
    e = refusal(sql)
    assert e is not None and (e.line, e.col) == (2, 40)  # the opening quote of the value
    assert "'DRIVER_CANCELED' is not a value of gojek.esb.booking.BookingStatus (status)" in str(e)
    assert "did you mean 'DRIVER_CANCELLED'" in str(e)


def test_a_number_for_an_enum_is_refused_naming_the_value_it_stands_for():
    e = refusal("SELECT driver_id FROM pings WHERE driver_status = 1")
    assert e is not None and "the number 1 matches nothing: write 'AVAILABLE'" in str(e)
    e = refusal("SELECT driver_id FROM pings WHERE driver_status = 99")
    assert e is not None and "compare with one of its names: UNKNOWN, AVAILABLE" in str(e)


@pytest.mark.parametrize(
    "sql, value",
    [
        ("SELECT driver_id FROM pings p WHERE p.driver_status <> 'available'", "'available'"),  # case
        ("SELECT driver_id FROM pings WHERE 'BUSSY' = driver_status", "'BUSSY'"),  # reversed
        ("SELECT driver_id FROM pings WHERE DRIVER_STATUS = ('OFFLINE ')", "'OFFLINE '"),  # paren, space
        ("SELECT CASE status WHEN 'COMPLETED' THEN 1 WHEN 'CANCELED' THEN 2 END AS k FROM bookings", "'CANCELED'"),
        ("SELECT CASE WHEN status = 'COMPLETE' THEN 1 END AS k FROM bookings", "'COMPLETE'"),
        (
            "SELECT b.order_number FROM bookings b JOIN pings p ON b.driver_id = p.driver_id "
            "WHERE p.driver_status = 'ONTRIP'",
            "'ONTRIP'",
        ),
        ("SELECT order_number FROM bookings /* 'COMPLETED' */ WHERE status = -- x\n 'completed'", "'completed'"),
    ],
)
def test_other_spellings_are_refused_too(sql, value):
    e = refusal(sql)
    assert e is not None and f"{value} is not a value of" in str(e), sql


def test_every_wrong_value_is_named_in_one_refusal():
    e = refusal("SELECT order_number FROM bookings WHERE status = 'COMPLETE' OR status IN ('CREATD', 'CREATED')")
    assert e is not None and "'COMPLETE'" in str(e) and "also: 'CREATD' is not a value" in str(e)
    assert "(line 1, column" in str(e).split("also:")[1]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT order_number FROM bookings WHERE status IN ('COMPLETED', 'DRIVER_CANCELLED')",
        "SELECT b.order_number FROM bookings b JOIN pings p ON b.driver_id = p.driver_id "
        "WHERE b.status = 'COMPLETED' AND p.driver_status = 'BUSY'",
        # the columns of a subquery, or a computed column, may be anything: not judged as the enum
        "SELECT s FROM (SELECT CAST(status AS INT) AS status, 1 AS s FROM bookings) t WHERE status = 1",
        "SELECT UPPER(CAST(status AS STRING)) AS status FROM bookings WHERE UPPER(CAST(status AS STRING)) = 'X'",
        "SELECT order_number FROM bookings WHERE status LIKE 'CANCEL%'",
        "SELECT order_number FROM bookings WHERE order_number = 'ANYTHING'",  # a string field, not an enum
    ],
)
def test_what_is_right_or_not_an_enum_comparison_passes(sql):
    assert refusal(sql) is None


def test_validate_refuses_a_job_with_a_wrong_enum_value_before_spark_starts(tmp_path, capsys):
    text = (EXAMPLES / "completed_bookings_by_s2.yaml").read_text()
    assert "status='COMPLETED'" in text
    path = tmp_path / "job.yaml"
    path.write_text(text.replace("status='COMPLETED'", "status='COMPLETD'"))
    assert main(["validate", "--no-spark", str(path)]) == 2
    err = capsys.readouterr().err
    assert "'COMPLETD' is not a value of gojek.esb.booking.BookingStatus" in err and "'COMPLETED'" in err
