"""finetune at toy size (the tiny random GPT-2, a tiny BERT as the reward featurizer, the bundled plays):
checkpoints that load, curves, bit-identical resume after SIGKILL, refused settings, the command line."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxmetrics.data import load_shakespeare
from jaxmetrics.models import load_model
from jaxmetrics.training import FinetuneSettings, finetune, mauve_influence_rewards

ROOT = Path(__file__).resolve().parents[2]
TOY = dict(batch_size=8, prompt_len=4, gen_len=8, learning_rate=1e-2, seed=7, num_reward_references=32,
           num_dev_prompts=16)


@pytest.fixture(scope="module")
def texts():
    return load_shakespeare("train", limit=150)


def _weights(out_dir):
    from safetensors.numpy import load_file

    return load_file(str(Path(out_dir) / "model.safetensors"))


def _same(a, b):
    wa, wb = _weights(a), _weights(b)
    return wa.keys() == wb.keys() and all(np.array_equal(wa[k], wb[k]) for k in wa)


def test_mle_lowers_the_loss_and_writes_a_checkpoint_load_model_takes(gpt2_dir, texts, tmp_path):
    import jax
    from flax import nnx

    start = load_model(gpt2_dir)
    ids = np.array([[5, 6, 7, 8]])
    before = np.asarray(start.forward(ids, np.ones_like(ids)).logits)
    weights = [np.asarray(x) for x in jax.tree.leaves(nnx.state(start.model, nnx.Param))]
    res = finetune(model=start, objective="mle", train_texts=texts, out_dir=tmp_path / "run", steps=4,
                   progress=False, **TOY)
    assert res.loss.shape == (4,) and res.reward_mean is None and res.kl is None
    assert res.loss[-1] < res.loss[0]
    assert "metric:finetune" in res.signature and "objective:mle" in res.signature
    tuned = load_model(res.checkpoint)
    assert not np.allclose(tuned.forward(ids, np.ones_like(ids)).logits, before)
    np.testing.assert_array_equal(load_model(gpt2_dir).forward(ids, np.ones_like(ids)).logits, before)
    after = [np.asarray(x) for x in jax.tree.leaves(nnx.state(start.model, nnx.Param))]
    assert all(np.array_equal(a, b) for a, b in zip(weights, after))      # the caller's model is not modified
    json.dumps(res.to_dict())
    # the same out_dir with other settings: refused, naming out_dir and what differs
    with pytest.raises(ValueError, match="^out_dir: .* other settings .*learning_rate"):
        finetune(model=start, objective="mle", train_texts=texts, out_dir=tmp_path / "run", steps=4,
                 progress=False, **dict(TOY, learning_rate=0.5))


_KILLED = """
import json, os, signal, sys
from jaxmetrics.data import load_shakespeare
from jaxmetrics.training import finetune, loop
real = loop._train_one_step
def step_then_die(run, update, state, step):
    out = real(run, update, state, step)
    if step == 3:                               # after step 3; the last state written is step 2's
        os.kill(os.getpid(), signal.SIGKILL)
    return out
loop._train_one_step = step_then_die
finetune(model=sys.argv[1], out_dir=sys.argv[2], train_texts=load_shakespeare("train", limit=150), progress=False,
         **json.loads(sys.argv[3]))
"""


def test_a_run_killed_with_sigkill_resumes_to_identical_parameters(gpt2_dir, texts, tmp_path):
    kw = dict(TOY, objective="mle", steps=5, checkpoint_every=2)
    out = tmp_path / "killed"
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", _KILLED, gpt2_dir, str(out), json.dumps(kw)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert not (out / "model.safetensors").exists()
    resumed = finetune(model=gpt2_dir, train_texts=texts, out_dir=out, progress=False, **kw)
    assert resumed.resumed_from == 2
    whole = finetune(model=gpt2_dir, train_texts=texts, out_dir=tmp_path / "whole", progress=False, **kw)
    assert whole.resumed_from == 0
    assert _same(out, tmp_path / "whole")
    np.testing.assert_array_equal(resumed.loss, whole.loss)


def test_mauve_policy_gradient_trains_with_a_kl_that_starts_at_zero(tiny_checkpoint_dir, texts, tmp_path, monkeypatch):
    import jaxmetrics.training.loop as loop

    gpt2, bert = tiny_checkpoint_dir("gpt2"), tiny_checkpoint_dir("bert")
    seen, pools, cands = [], [], []   # the reward's codebook size is the setting's; the pool holds earlier samples

    def recording(**kw):
        seen.append(kw["num_buckets"])
        pools.append(np.array(kw["pool"]))
        cands.append(np.array(kw["candidates"]))
        return mauve_influence_rewards(**kw)

    monkeypatch.setattr(loop, "mauve_influence_rewards", recording)
    res = finetune(model=gpt2, objective="mauve-pg", train_texts=texts, featurizer=bert, out_dir=tmp_path / "pg",
                   steps=3, progress=False, reward_num_buckets=3, mle_coef=0.5, reward_pool=12, **TOY)
    assert seen == [3, 3, 3] and "reward_num_buckets:3" in res.signature and "mle_coef:0.5" in res.signature
    assert "reward_pool:12" in res.signature
    # step 1 has no earlier samples; step 2 pools step 1's; step 3 the newest 12 (step 2's, then step 1's)
    assert len(pools[0]) == 0 and len(cands[0]) > 0
    np.testing.assert_array_equal(pools[1], cands[0])
    np.testing.assert_array_equal(pools[2], np.concatenate([cands[1], cands[0]])[:12])
    assert len(pools[2]) == 12
    assert abs(res.kl[0]) < 1e-7 < res.kl[1]             # step 1 starts at the starting model (to rounding)
    assert np.all(np.isfinite(res.reward_mean)) and np.all(np.isfinite(res.loss))
    assert res.eval_steps.size == 0
    assert "objective:mauve_pg" in res.signature and "featurizer:" in res.signature


def test_mle_coef_adds_that_multiple_of_mle_on_the_human_passages(gpt2_dir):
    from jaxmetrics.training.objectives import mle
    from jaxmetrics.training.steps import build_update

    lm = load_model(gpt2_dir)
    rng = np.random.default_rng(0)
    ids, human = (rng.integers(0, 50, (4, 12)).astype(np.int32) for _ in range(2))
    batch = {"ids": ids, "advantage": np.array([0.3, -0.1, 0.2, -0.4], np.float32), "human": human}
    settings = FinetuneSettings(objective="mauve_pg", prompt_len=4, gen_len=8, batch_size=4)
    loss = {}
    for coef in (0.0, 0.7):
        update, params, tx = build_update(lm.model, settings.replace(mle_coef=coef))
        loss[coef] = float(update(params, tx.init(params), params, batch)[2])
    ones = np.ones((4, 11), bool)
    by_hand = float(mle(lm.forward(human[:, :-1], ones).logits, human[:, 1:], ones))
    assert by_hand > 1.0
    np.testing.assert_allclose(loss[0.7] - loss[0.0], 0.7 * by_hand, rtol=1e-5)


@pytest.mark.slow
def test_policy_gradient_resumes_identically(tiny_checkpoint_dir, texts, tmp_path):
    gpt2, bert = tiny_checkpoint_dir("gpt2"), tiny_checkpoint_dir("bert")
    settings = FinetuneSettings(objective="mauve-pg", steps=2, eval_every=2, **TOY)
    common = dict(model=gpt2, train_texts=texts, dev_texts=texts[::-1], featurizer=bert, progress=False)
    finetune(out_dir=tmp_path / "a", settings=settings, **common)
    longer = finetune(out_dir=tmp_path / "a", settings=settings, steps=3, **common)   # continues the run
    whole = finetune(out_dir=tmp_path / "b", settings=settings, steps=3, **common)
    assert longer.resumed_from == 2 and _same(tmp_path / "a", tmp_path / "b")
    assert whole.eval_steps.tolist() == [2] and 0.0 < whole.dev_mauve[0] <= 1.0
    np.testing.assert_array_equal(longer.reward_mean, whole.reward_mean)
    np.testing.assert_array_equal(longer.dev_mauve, whole.dev_mauve)


@pytest.mark.slow
def test_token_ot_and_twmd_pg_train(tiny_checkpoint_dir, texts, tmp_path):
    gpt2, bert = tiny_checkpoint_dir("gpt2"), tiny_checkpoint_dir("bert")
    ot = finetune(model=gpt2, objective="token_ot", train_texts=texts, out_dir=tmp_path / "ot", steps=3,
                  progress=False, **TOY)
    assert ot.loss[-1] < ot.loss[0]
    tw = finetune(model=gpt2, objective="twmd_pg", train_texts=texts, out_dir=tmp_path / "tw", steps=2,
                  featurizer=bert, progress=False, **TOY)
    assert tw.reward_mean.shape == (2,) and np.all(np.isfinite(tw.reward_mean))
    assert load_model(tw.checkpoint).is_causal


def test_bad_settings_are_refused_by_name_before_loading(no_model, tmp_path):
    for kw, name in ((dict(steps=0), "steps"), (dict(objective="rl"), "objective"), (dict(kl_coef=-1.0), "kl_coef"),
                     (dict(mle_weight=2.0), "mle_weight"), (dict(reward_num_buckets=1), "reward_num_buckets"),
                     (dict(reward_num_buckets="many"), "reward_num_buckets"), (dict(mle_coef=-0.5), "mle_coef"),
                     (dict(mle_coef=0.5), "mle_coef"), (dict(reward_pool=-1), "reward_pool")):
        with pytest.raises(ValueError, match=f"^{name}:"):
            finetune(model="m", out_dir=tmp_path / "x", **{"objective": "mle", **kw})
    with pytest.raises(TypeError, match="^lr:"):
        finetune(model="m", objective="mle", out_dir=tmp_path / "x", lr=1.0)
    with pytest.raises(ValueError, match="^dev_texts:"):
        finetune(model="m", objective="mle", out_dir=tmp_path / "x", eval_every=5)
    assert not (tmp_path / "x").exists()


def test_cli_checks_options_first_and_writes_a_checkpoint(gpt2_dir, no_model, tmp_path, capsys, monkeypatch):
    from jaxmetrics.cli import main

    for argv, flag in ((["--steps", "0"], "--steps:"), (["--eval-every", "2"], "--eval-every:"),
                       (["--kl-coef", "-1"], "--kl-coef:"), (["--batch-size", "1", "--objective", "twmd-pg"],
                                                            "--batch-size:"),
                       (["--reward-num-buckets", "1"], "--reward-num-buckets:"), (["--mle-coef", "1"], "--mle-coef:"),
                       (["--reward-pool", "-8"], "--reward-pool:")):
        args = ["finetune", "--model", "m", "--objective", "mle", "--out", str(tmp_path / "o"), *argv]
        assert main(args) == 2
        assert flag in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["finetune", "--model", "m", "--objective", "rl", "--out", str(tmp_path / "o")])
    assert "--objective" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["finetune", "--model", "m", "--objective", "mle", "--out", str(tmp_path / "o"),
              "--reward-num-buckets", "x"])
    assert "--reward-num-buckets" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    monkeypatch.undo()                      # now load models for real
    train = tmp_path / "train.txt"
    train.write_text("\n".join(load_shakespeare("train", limit=150)) + "\n")
    out = tmp_path / "cli"
    rc = main(["finetune", "--model", gpt2_dir, "--objective", "mle", "--out", str(out), "--steps", "2",
               "--batch-size", "8", "--prompt-len", "4", "--gen-len", "8", "--train-file", str(train), "--quiet",
               "--learning-rate", "0.01", "--json", str(tmp_path / "r.json")])
    assert rc == 0, capsys.readouterr().err
    assert load_model(out).is_causal
    assert json.loads((tmp_path / "r.json").read_text())["signature"].startswith("metric:finetune")
    rc = main(["finetune", "--model", gpt2_dir, "--objective", "mle", "--out", str(out), "--steps", "2",
               "--batch-size", "8", "--prompt-len", "4", "--gen-len", "8", "--train-file", str(train), "--quiet",
               "--seed", "1"])
    assert rc == 2 and "--out: " in capsys.readouterr().err
