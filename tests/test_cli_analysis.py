"""The analysis commands of the ``sweep`` CLI: exit codes, text and JSON output, plots."""

from __future__ import annotations

import json

import pytest

from sweep.cli import main
from sweep.results.files import write_dataset
from tests.test_analysis import make_result
from tests.test_plots import check_png


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    ds = make_result(hardware=("hw-a", "hw-b", "hw-c", "hw-d"), batch=(1, 8, 16, 64),
                     context=(128, 1024, 2048, 32768), seed=3)
    return str(write_dataset(ds, tmp_path_factory.mktemp("cli") / "result.nc"))


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_frontier_text_and_json(result, capsys):
    code, out, _ = run(capsys, "frontier", result, "--metric", "throughput", "--over",
                       "hardware")
    assert code == 0 and "crossover" in out
    code, out, _ = run(capsys, "frontier", result, "--metric", "tpot", "--over", "hardware",
                       "--json", "--best-over", "none")
    assert code == 0
    doc = json.loads(out)
    assert doc["metric"] == "tpot" and doc["best_over"] == []
    for row in doc["crossovers"]:
        assert row["winner_before"] != row["winner_after"]
        assert row["dim"] in ("batch", "context")


def test_pareto_text_and_json(result, capsys):
    code, out, _ = run(capsys, "pareto", result, "--objectives", "tpot", "throughput",
                       "tokens_per_joule", "--sel", "model=dense-8b")
    assert code == 0 and "non-dominated" in out
    code, out, _ = run(capsys, "pareto", result, "--objectives", "tpot:min",
                       "throughput:max", "--over", "hardware", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["non_dominated"] == len(doc["points"]) > 0
    assert doc["objectives"] == {"tpot": "min", "throughput": "max"}


def test_regimes_variation_strategies(result, capsys):
    code, out, _ = run(capsys, "regimes", result)
    assert code == 0 and "low_latency" in out and "definitions" in out
    code, out, _ = run(capsys, "regimes", result, "--json")
    doc = json.loads(out)
    assert code == 0 and [r["regime"] for r in doc][:2] == ["low_latency", "moderate_batch"]
    assert max(v for v in doc[0]["score"].values() if v is not None) == pytest.approx(1.0)
    code, out, _ = run(capsys, "variation", result, "--metric", "tpot")
    assert code == 0 and "varies up to" in out
    code, out, _ = run(capsys, "variation", result, "--json")
    assert code == 0 and json.loads(out)["max_variation"]["ratio"] >= 1
    code, out, _ = run(capsys, "strategies", result)
    assert code == 0 and "expert vs tensor" in out
    code, out, _ = run(capsys, "strategies", result, "--json")
    assert code == 0 and "ep_vs_tp_latency_cov" in json.loads(out)["ep_vs_tp"]


@pytest.mark.parametrize("kind", ["winner-map", "variation", "pareto", "roofline", "regimes",
                                  "serving-front"])
def test_plot_kinds(result, capsys, tmp_path, kind):
    out_png = tmp_path / f"{kind}.png"
    code, _, err = run(capsys, "plot", result, "--kind", kind, "-o", out_png)
    assert code == 0, err
    check_png(out_png)


def test_plot_options(result, capsys, tmp_path):
    png = tmp_path / "w.png"
    code, _, err = run(capsys, "plot", result, "--kind", "winner-map", "-o", png, "--model",
                       "moe-47b", "--precision", "fp8", "--metric", "tokens_per_joule")
    assert code == 0, err
    check_png(png)


@pytest.mark.parametrize("argv,needle", [
    (["frontier", "{r}", "--metric", "speed"], "unknown metric"),
    (["frontier", "{missing}", "--metric", "throughput"], "not found"),
    (["frontier", "{r}", "--over", "device"], "not a dim"),
    (["frontier", "{r}", "--metric", "bound"], "no better direction"),
    (["pareto", "{r}", "--objectives", "tpot"], "two or more"),
    (["pareto", "{r}", "--objectives", "tpot:fast", "throughput"], "'max' or 'min'"),
    (["regimes", "{r}", "--sel", "model"], "DIM=VALUE"),
    (["regimes", "{r}", "--sel", "model=gpt-9"], "not in the result"),
    (["plot", "{r}", "-o", "{tmp}/x.gif"], "format"),
    (["plot", "{r}", "-o", "{tmp}/none/x.png"], "does not exist"),
    (["plot", "{r}", "--model", "gpt-9", "-o", "{tmp}/x.png"], "gpt-9"),
    (["plot", "{r}", "--kind", "regimes", "--metric", "tpot", "-o", "{tmp}/x.png"],
     "does not apply"),
])
def test_bad_input_exits_2_with_one_line(result, capsys, tmp_path, argv, needle):
    argv = [a.format(r=result, missing=tmp_path / "nope.nc", tmp=tmp_path) for a in argv]
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert needle in err and err.startswith("sweep: error:")
    assert "Traceback" not in err


def test_argparse_errors_exit_2(result, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["plot", result])  # -o is required
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["plot", result, "--kind", "pie", "-o", "x.png"])
    assert exc.value.code == 2


def test_goodput_text_and_json(result, capsys):
    code, out, _ = run(capsys, "goodput", result, "--tpot", "0.05", "--per", "kW")
    assert code == 0 and "targets met at" in out and "per kW" in out
    code, out, _ = run(capsys, "goodput", result, "--ttft", "1", "--tpot", "0.05", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["basis"] == "per device" and doc["points"] == len(doc["rows"])
    met = [r for r in doc["rows"] if r["goodput"] is not None]
    assert len(met) == doc["met"] > 0
    assert all(r["tpot_at"] <= 0.05 and r["ttft_at"] <= 1 for r in met)
    # sorted best first
    vals = [r["goodput"] for r in met]
    assert vals == sorted(vals, reverse=True)
    code, _, err = run(capsys, "goodput", result)
    assert code == 2 and "ttft or tpot" in err


def test_basis_option(result, capsys):
    code, out, _ = run(capsys, "variation", result, "--basis", "device", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["basis"] == "per device" == doc["max_variation"]["basis"]
    assert doc["max_variation"]["best_layout"] and doc["max_variation"]["worst_layout"]
    code, out, _ = run(capsys, "variation", result, "--basis", "none", "--json")
    assert code == 0 and json.loads(out)["basis"] == "grid values (no basis)"
    code, out, _ = run(capsys, "variation", result)
    assert code == 0 and "per kW (system boundary)" in out and "median" in out
    code, _, err = run(capsys, "variation", result, "--basis", "watts")
    assert code == 2 and "unknown kind" in err and len(err.strip().splitlines()) == 1


def test_frontier_text_says_where_the_winner_changes(result, capsys):
    code, out, _ = run(capsys, "frontier", result, "--metric", "throughput", "--limit", "0",
                       "--sel", "model=dense-8b", "--sel", "precision=bf16")
    assert code == 0
    _, js, _ = run(capsys, "frontier", result, "--metric", "throughput", "--json",
                   "--sel", "model=dense-8b", "--sel", "precision=bf16")
    rows = json.loads(js)["crossovers"]
    lines = out.splitlines()[1:]
    assert "<NA>" not in out and len(lines) == len(rows) > 0
    for line, r in zip(lines, rows):
        other = "context" if r["dim"] == "batch" else "batch"
        assert f"{other} {r[other]}:" in line
        assert (f"{r['winner_before']} wins up to {r['dim']} {r['value_before']} " in line
                and f"{r['winner_after']} from {r['dim']} {r['value_after']} " in line)


def test_sel_takes_several_values(result, capsys):
    code, out, _ = run(capsys, "goodput", result, "--tpot", "10", "--json", "--sel",
                       "hardware=hw-a,hw-c", "--sel", "model=dense-8b")
    assert code == 0
    assert {r["hardware"] for r in json.loads(out)["rows"]} == {"hw-a", "hw-c"}
    code, _, err = run(capsys, "goodput", result, "--tpot", "10", "--sel", "hardware=hw-a,hw-z")
    assert code == 2 and "hw-z" in err
    code, _, err = run(capsys, "goodput", result, "--tpot", "10", "--sel", "hardware=hw-a,")
    assert code == 2 and "DIM=A,B" in err


def test_version_help_and_python_m(capsys):
    import subprocess
    import sys

    from sweep.results.provenance import package_version

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"sweep {package_version()}"
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "README" not in text and "sweep run" in text and "report" in text
    res = subprocess.run([sys.executable, "-m", "sweep", "--version"], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.startswith("sweep ")


def test_info_json(result, capsys):
    code, out, _ = run(capsys, "info", result, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["dims"]["hardware"] == ["hw-a", "hw-b", "hw-c", "hw-d"]
    assert doc["metrics"]["throughput"]["units"] == "token/s"
    assert doc["metrics"]["tpot"]["better"] == "min"


def test_run_json(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('hardware = ["h100-sxm", "mi300x"]\nmodel = ["llama-3.1-8b"]\n'
                    'batch = [1, 8]\ncontext = [1024]\nprecision = ["bf16"]\n'
                    'parallelism = ["tp1"]\n', encoding="utf-8")
    code, out, _ = run(capsys, "run", spec, "-o", tmp_path / "r.nc", "--json", "--no-progress")
    doc = json.loads(out)
    assert code == 0 and doc["points"] == 4 and doc["dims"]["hardware"] == 2
    assert doc["output"].endswith("r.nc") and 0 <= doc["feasible_fraction"] <= 1
    assert doc["variation"]["over"] == "hardware"
