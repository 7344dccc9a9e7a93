"""The cost bench's arithmetic (bench/cost.py, bench/capacity.py): docs/cost.md is written from it."""

from __future__ import annotations

import pytest

from bench.capacity import read_units, write_units
from bench.cost import PRICES, LogRate, LogRates, TurnCounts, chat_stream_memory, per_thousand


def test_a_transaction_bills_two_units_per_started_kilobyte_of_each_item():
    small = {"PK": {"S": "CONV#1"}, "SK": {"S": "META"}}
    large = {"PK": {"S": "CONV#1"}, "text": {"S": "x" * 1500}}
    assert write_units(small, transactional=False) == 1
    assert write_units(small, transactional=True) == 2
    assert write_units(large, transactional=True) == 4


def test_reads_bill_per_started_four_kilobytes_and_half_when_eventually_consistent():
    items = [{"text": {"S": "x" * 3000}}, {"text": {"S": "y" * 3000}}]
    assert read_units(items, consistent=True) == 2
    assert read_units(items, consistent=False) == 1
    assert read_units([], consistent=True) == 1


def test_the_log_rate_is_the_line_through_the_measured_points():
    rate = LogRate.fit([(1.0, 9.0), (10.0, 61.0), (40.0, 238.0)])
    assert rate.per_second == pytest.approx(5.87, abs=0.01)
    assert rate.units(10.0) == pytest.approx(61.0, abs=2)


def test_per_thousand_prices_each_part_as_docs_cost_md_redoes_it():
    counts = TurnCounts(write_units=10, read_units=2, s3_requests=0, service_seconds=0.1)
    log = LogRates(writes=LogRate(4.1, 0.97), reads=LogRate(0.1, 1.97))
    priced = per_thousand(counts, log, model_wait=5.0, memory_mb=1024)
    assert priced["lambda"] == pytest.approx(1000 * (5.1 * PRICES["lambda_gb_second_arm64"] + 0.2e-6))
    assert priced["dynamodb"] == pytest.approx(1000 * (10 * 0.625e-6 + 2 * 0.125e-6))
    assert priced["event log"] == pytest.approx(
        1000 * ((4.1 + 0.97 * 5) * 0.625e-6 + (0.1 + 1.97 * 5) * 0.125e-6)
    )
    assert priced["s3"] == 0
    assert priced["total"] == pytest.approx(priced["lambda"] + priced["dynamodb"] + priced["event log"])
    halved = per_thousand(counts, log, model_wait=5.0, memory_mb=512)
    assert halved["gb_seconds"] == pytest.approx(priced["gb_seconds"] / 2)


def test_the_memory_is_the_templates():
    assert chat_stream_memory() == 512


def test_a_size_without_a_cgroup_has_its_times_divided_by_lambdas_share():
    from bench.cpu_share import Quota

    unlimited = Quota(512, None)
    assert unlimited.share == pytest.approx(512 / 1769)
    assert not unlimited.emulated
    assert unlimited.scaled(0.29) == pytest.approx(0.29 * 1769 / 512)
