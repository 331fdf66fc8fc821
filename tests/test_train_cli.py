"""`python -m tensorplay train`: short runs through main([...]) in this process.

Each run is cut down (--limit, --epochs 1) so the file stays well under a minute; the full
default run (>= 97% test accuracy) is measured by benchmarks/bench_training.py and by hand.
"""
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("tqdm")
pytest.importorskip("matplotlib")

import tensorplay as tp  # noqa: E402
from tensorplay.__main__ import main  # noqa: E402
from tensorplay.train import data, loop, route  # noqa: E402
from tensorplay.utils.data import TensorDataset  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def train(capsys, out, *extra):
    """Run `tensorplay train --no-progress --out OUT *extra`; returns its stdout."""
    assert main(["train", "--no-progress", "--out", str(out), *extra]) == 0
    return capsys.readouterr().out


def reported_accuracy(text):
    match = re.search(r"test accuracy: (\d+\.\d+)% \((\d+)/(\d+)", text)
    assert match, text
    return float(match.group(1)), int(match.group(2)), int(match.group(3))


def test_no_command_prints_help(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "usage: tensorplay" in out and "train" in out and "tour" in out


def test_short_cnn_run_saves_checkpoint_and_curves_then_resumes(tmp_path, capsys):
    out = train(capsys, tmp_path, "--epochs", "1", "--limit", "300")
    percent, correct, seen = reported_accuracy(out)
    assert seen == 360 and abs(percent - 100 * correct / seen) < 0.01
    # one epoch on 300 images (ten steps) already learns something: chance is 10%. (Its
    # test accuracy sits near 50%, where float noise in a kernel's sum order moves it by
    # a point: 49.4-51.1% as the cross-entropy and grad_input kernels changed.)
    assert percent > 30, out
    checkpoint = tmp_path / "checkpoint.tp"
    assert f"checkpoint: {checkpoint}" in out and f"curves: {tmp_path / 'curves.png'}" in out
    assert (tmp_path / "curves.png").read_bytes()[:8] == PNG_MAGIC

    saved = tp.load(str(checkpoint))
    assert saved["epoch"] == 1 and saved["args"]["model"] == "cnn"
    assert len(saved["history"]["test_acc"]) == 1
    assert saved["history"]["test_acc"][0] == correct / seen
    steps = -(-300 // 32)
    adam_state = saved["optimizer"]["state"]
    assert adam_state and all(int(s["step"]) == steps for s in adam_state.values())

    out = train(capsys, tmp_path, "--resume", str(checkpoint), "--epochs", "1")
    assert "epochs 2..2" in out and "epoch 2/2" in out
    resumed = tp.load(str(checkpoint))
    assert resumed["epoch"] == 2 and resumed["args"]["limit"] == 300   # limit came back
    assert len(resumed["history"]["train_loss"]) == 2
    assert all(int(s["step"]) == 2 * steps for s in resumed["optimizer"]["state"].values())

    # the resumed run computes exactly what two epochs in one go compute: the weights,
    # the optimizer moments and the reseeded shuffling all came back
    straight = tmp_path / "straight"
    train(capsys, straight, "--epochs", "2", "--limit", "300")
    once = tp.load(str(straight / "checkpoint.tp"))
    assert once["history"] == resumed["history"]
    for name, value in once["model"].items():
        assert tp.equal(value, resumed["model"][name]), name


def test_progress_bar_shows_running_loss_and_accuracy(tmp_path, capsys):
    assert main(["train", "--model", "mlp", "--epochs", "1", "--limit", "64",
                 "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "epoch 1/1" in err and "/2 [" in err and re.search(r"acc=0\.\d{3}, loss=\d\.\d{4}", err)


def test_same_seed_same_numbers_other_seed_other_numbers(tmp_path, capsys):
    args = ("--model", "mlp", "--epochs", "1", "--limit", "200")
    first = train(capsys, tmp_path / "a", *args, "--seed", "3")
    second = train(capsys, tmp_path / "b", *args, "--seed", "3")
    other = train(capsys, tmp_path / "c", *args, "--seed", "4")

    def losses(text):
        return re.findall(r"train loss (\S+) acc .* test loss (\S+)", text)
    assert losses(first) == losses(second)
    assert losses(first) != losses(other)


@pytest.mark.parametrize("args, message", [
    (["--model", "resnet"], "argument --model: invalid choice: 'resnet'"),
    (["--epochs", "0"], "argument --epochs: must be at least 1, got 0"),
    (["--batch-size", "many"], "argument --batch-size: invalid int value: 'many'"),
    (["--lr", "-0.1"], "argument --lr: must be greater than 0, got -0.1"),
    (["--optimizer", "lbfgs"], "argument --optimizer: invalid choice: 'lbfgs'"),
    (["--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
])
def test_bad_options_exit_with_argparse_message(args, message, capsys):
    with pytest.raises(SystemExit) as info:
        main(["train", *args])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: tensorplay" in err and message in err


def test_unwritable_out_fails_before_training(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(SystemExit) as info:
        main(["train", "--out", str(blocker / "run")])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert f"--out {blocker / 'run'}: cannot write there" in captured.err
    assert "training" not in captured.out


def test_resume_errors(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["train", "--resume", str(tmp_path / "missing.tp")])
    assert "no such file" in capsys.readouterr().err

    train(capsys, tmp_path, "--model", "mlp", "--epochs", "1", "--limit", "64")
    with pytest.raises(SystemExit):
        main(["train", "--model", "cnn", "--resume", str(tmp_path / "checkpoint.tp")])
    assert "--model cnn does not match the checkpoint, which holds a mlp model" in \
        capsys.readouterr().err

    tp.save({"weights": tp.ones(2)}, str(tmp_path / "other.tp"))
    with pytest.raises(SystemExit):
        main(["train", "--resume", str(tmp_path / "other.tp")])
    assert "not a training checkpoint" in capsys.readouterr().err


def test_tiny_transformer_prints_a_sample(tmp_path, capsys):
    out = train(capsys, tmp_path, "--model", "transformer", "--epochs", "1", "--limit", "64",
                "--context", "16")
    percent, correct, seen = reported_accuracy(out)
    assert "next characters" in out and seen > 1000
    sample = out.split("sample:\n", 1)[1].split("\nwall time:", 1)[0]
    assert sample.startswith("Shall I compare thee") and len(sample) > 150
    saved = tp.load(str(tmp_path / "checkpoint.tp"))
    assert saved["args"]["context"] == 16 and len(saved["vocab"]) > 50


def test_explain_prints_a_bounded_route(tmp_path, capsys):
    out = train(capsys, tmp_path, "--epochs", "1", "--limit", "64", "--explain")
    text = out.split("dispatch route of one training step", 1)[1].split("test accuracy", 1)[0]
    lines = text.splitlines()
    assert 20 < len(lines) < 150, text
    assert "forward (model and loss)" in text and "backward:" in text
    assert "optimizer step (Adam)" in text
    assert re.search(r"convolution\S*\s+x2\s+AutogradCPU", text), text
    assert "cpu_kernels.conv" in text


def test_profile_prints_the_op_table(tmp_path, capsys):
    out = train(capsys, tmp_path, "--model", "mlp", "--epochs", "1", "--limit", "64",
                "--profile")
    table = out.split("profile of epoch 1", 1)[1].split("test accuracy", 1)[0]
    assert re.search(r"\n(addmm|linear|mm)\S*\s+\d+\s+\d", table), table
    assert len(table.splitlines()) <= loop.PROFILE_ROWS + 4


def test_route_summary_folds_repeated_calls():
    lines = [
        "relu(float32[2])",
        "  key set   {CPU} = given {CPU} | included {} - excluded {}",
        "    dispatch  CPU -> kernel registry (1 candidate)",
        "    kernel    cpu_kernels.pointwise.relu",
        "  result    float32[2]",
        "relu(float32[2])",
        "  key set   {CPU} = given {CPU} | included {} - excluded {}",
        "    dispatch  CPU -> kernel registry (1 candidate)",
        "    kernel    cpu_kernels.pointwise.relu",
        "  result    float32[2]",
    ]
    text = route.summarise([("forward", lines)])
    assert "2 top-level op calls" in text and "1 distinct routes" in text
    assert "relu" in text and "x2" in text and "CPU: registry -> cpu_kernels.pointwise.relu" in text


def test_cuda_smoke_under_the_interpreter(tmp_path, capsys, monkeypatch):
    pytest.importorskip("triton")
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        pytest.skip("no GPU and no Triton interpreter")
    # The interpreter runs the loss one program per row: the whole test set (360 digits)
    # cost 80% of this test. The first 40 of it take the same path.
    whole = data.digits

    def digits(seed, limit=None, test_size=0.2):
        split = whole(seed, limit, test_size)
        split.test = TensorDataset(*(t[:40] for t in split.test.tensors))
        return split
    monkeypatch.setattr(data, "digits", digits)
    out = train(capsys, tmp_path, "--model", "mlp", "--device", "cuda", "--epochs", "1",
                "--limit", "16", "--batch-size", "8")
    assert "device cuda" in out
    assert reported_accuracy(out)[2] == 40
    saved = tp.load(str(tmp_path / "checkpoint.tp"), map_location="cpu")
    assert all(v.device.type == "cpu" for v in saved["model"].values())
    # a checkpoint written from cuda resumes on the CPU
    out = train(capsys, tmp_path, "--resume", str(tmp_path / "checkpoint.tp"), "--epochs", "1")
    assert "epochs 2..2, device cpu" in out and "epoch 2/2" in out


def test_cuda_without_gpu_or_interpreter_fails_clearly(tmp_path):
    pytest.importorskip("triton")
    if tp.cuda.is_available():
        pytest.skip("a GPU is present")
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITON_INTERPRET", "TENSORPLAY_TRITON_INTERPRET")}
    result = subprocess.run([sys.executable, "-m", "tensorplay", "train", "--device", "cuda",
                             "--out", str(tmp_path)], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "--device cuda: no GPU found" in result.stderr
    assert "TRITON_INTERPRET=1" in result.stderr
