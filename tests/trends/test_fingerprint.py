"""Testbeds: made from the one host probe, never from the hostname; a setting names one."""

import os
import subprocess
import sys

from jobs.record.attempts import HostFacts
from jobs.trends.fingerprint import FIELDS, clashes, host_testbed, nominal_gb, stable_fields
from workers.host_facts import facts

_H200 = HostFacts(hostname="lab-1", os="Ubuntu 24.04.1 LTS", kernel="6.8.0-45", arch="x86_64",
                  cpu="Intel Xeon Platinum 8480+", chip="NVIDIA H200 sm_90",
                  cores=224, memory_gb=2015.56, gpu="NVIDIA H200 sm_90", python="3.12.3",
                  driver="565.57.01", cuda="12.7", power_mode="performance")


def test_the_hostname_kernel_and_python_are_no_part_of_a_testbed() -> None:
    moved = _H200.model_copy(update={"hostname": "ci-runner-93", "kernel": "6.8.0-47",
                                     "python": "3.11.9", "memory_gb": 2015.31})
    assert host_testbed(moved) == host_testbed(_H200)
    assert not host_testbed(_H200).declared


def test_a_driver_update_or_power_mode_is_a_new_testbed() -> None:
    for change in ({"driver": "570.86.10"}, {"power_mode": "powersave"},
                   {"gpu": "NVIDIA H100 80GB HBM3 sm_90"}):
        assert host_testbed(_H200.model_copy(update=change)).id != host_testbed(_H200).id


def test_the_setting_names_the_testbed_and_the_fields_stay_shown() -> None:
    named = host_testbed(_H200.model_copy(update={"testbed": "h200-lab"}))
    assert (named.id, named.declared) == ("h200-lab", True)
    assert named.fields["driver"] == "565.57.01" and named.fields["memory_gb"] == "2048"


def test_two_hosts_claiming_one_name_with_other_facts_get_a_sentence() -> None:
    one = host_testbed(_H200.model_copy(update={"testbed": "lab"}))
    other = host_testbed(_H200.model_copy(update={"testbed": "lab", "driver": "570.86.10"}))
    [sentence] = clashes({"lab-1": one, "lab-2": other})
    assert "lab-1, lab-2" in sentence and "driver" in sentence
    assert clashes({"lab-1": one, "lab-3": one}) == []


def test_memory_is_the_nominal_size_the_probe_reads_a_little_under() -> None:
    assert [nominal_gb(g) for g in (15.6, 23.54, 35.9, 119.7, 191.8, 510.2, 2015.56)] == [
        16, 24, 36, 128, 192, 512, 2048]


def test_this_hosts_probe_gives_its_fields() -> None:
    host = facts()  # the probe `benchfleet hosts` shows and the record prints
    fields = stable_fields(host)
    assert fields["chip"] == host.chip and fields["arch"] == host.arch
    assert set(fields) <= set(FIELDS)


def test_the_worker_setting_reaches_the_probe() -> None:
    # facts() is probed once per process: ask a fresh one.
    code = "from workers.host_facts import facts; print(facts().testbed)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "BENCHFLEET_TESTBED": "gb10-bench"}, timeout=60)
    assert done.stdout.strip() == "gb10-bench", done.stderr
