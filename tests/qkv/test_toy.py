"""Tests of qkv.experiments.toy: the agreement task, baselines, model and training."""

from __future__ import annotations

import collections
import copy
import random

import pytest
import torch

import qkv
from qkv.experiments import toy


def test_examples_follow_the_grammar_of_the_task():
    rng = random.Random(0)
    for _ in range(500):
        example = toy.make_example(rng)
        words = example.words
        subject = words[example.antecedent]
        assert words[-1] == toy.SLOT and words[-3:-1] == list(toy.ENDING)
        assert words[example.antecedent + 1] == "qui"
        assert words[example.antecedent + 2] in toy.VERBS
        assert all(w in toy.FILLERS for w in words[: example.antecedent])
        assert example.label == int(subject in toy.ANIMALS_F)
        # The subject is the first noun and the first animal.
        nouns = [i for i, w in enumerate(words) if w in toy.NOUNS]
        assert nouns[0] == example.antecedent and subject in toy.ANIMALS
        # Then noun phrases: a preposition and a noun, each noun used once.
        phrases = words[example.antecedent + 3 : -3]
        assert all(w in toy.PREPOSITIONS for w in phrases[0::2])
        assert all(w in toy.NOUNS for w in phrases[1::2])
        assert len(set(phrases[1::2])) == len(phrases[1::2])
        animals = [w for w in words if w in toy.ANIMALS]
        assert len(animals) in (1, 1 + toy.OTHER_ANIMALS)
        assert len(phrases) // 2 - (len(animals) - 1) <= toy.MAX_PLACES
        assert example.other_animals == [
            i for i in nouns if words[i] in toy.ANIMALS and i != example.antecedent
        ]
        assert example.nearest_noun == nouns[-1]
        assert example.distance == len(words) - 1 - example.antecedent
        assert len(words) <= toy.MAX_LEN


def test_counting_genders_says_nothing_about_the_answer():
    examples = toy.make_examples(8000, seed=1)
    alone = [e for e in examples if not e.other_animals]
    assert abs(len(alone) / len(examples) - toy.SUBJECT_ALONE) < 0.01
    # Among sentences with other animals, the number of feminine animals has the
    # same distribution whatever the answer.
    counts = {0: collections.Counter(), 1: collections.Counter()}
    other = total = 0
    for e in examples:
        if not e.other_animals:
            continue
        animals = [e.words[e.antecedent]] + [e.words[i] for i in e.other_animals]
        counts[e.label][sum(w in toy.ANIMALS_F for w in animals)] += 1
        for i in e.other_animals:
            other += (e.words[i] in toy.ANIMALS_F) != bool(e.label)
            total += 1
    shares = {
        label: {k: n / sum(c.values()) for k, n in c.items()}
        for label, c in counts.items()
    }
    assert set(shares[0]) == set(shares[1]) == set(range(1, toy.OTHER_ANIMALS + 1))
    for k in shares[0]:
        assert abs(shares[0][k] - shares[1][k]) < 0.03, (k, shares)
    assert abs(other / total - toy.DISTRACTOR_OTHER_GENDER) < 0.02
    # Places have either gender, whatever the answer.
    places = [
        (w in toy.PLACES_F, e.label)
        for e in examples
        for w in e.words
        if w in toy.PLACES_F + toy.PLACES_M
    ]
    for label in (0, 1):
        feminine = [f for f, lab in places if lab == label]
        assert abs(sum(feminine) / len(feminine) - 0.5) < 0.03


def test_neither_position_nor_distance_of_the_subject_is_fixed():
    examples = toy.make_examples(2000, seed=2)
    positions = {e.antecedent for e in examples}
    distances = {e.distance for e in examples}
    assert positions == set(range(toy.MAX_FILLERS + 1))
    assert len(distances) >= 3
    # The slot's position depends on both, so none of them pins the subject.
    pairs = {(e.antecedent, len(e.words) - 1) for e in examples}
    assert len(pairs) >= len(positions) * 3
    for position in positions:
        assert len({e.distance for e in examples if e.antecedent == position}) >= 3


def test_examples_are_deterministic():
    first = toy.make_examples(50, seed=3)
    assert [e.words for e in first] == [e.words for e in toy.make_examples(50, seed=3)]
    assert [e.words for e in first] != [e.words for e in toy.make_examples(50, seed=4)]


def test_rules_that_ignore_the_subject_fail_and_the_first_animal_succeeds():
    results = toy.rule_baselines(toy.heldout_examples(seed=0))
    assert set(results) == {"majority class", *toy.RULES}
    # Measured on this held-out set: 0.51, 0.34, 0.29, 0.71, 0.55, 0.53, 1.0.
    assert 0.45 <= results["majority class"] <= 0.55
    assert results["nearest noun"] <= 0.45
    assert results["nearest animal"] <= 0.4
    assert results["opposite of the nearest animal"] <= 0.8
    assert results["majority gender of the nouns"] <= 0.62
    assert results["best bag of words"] <= 0.6
    assert results["first animal"] == pytest.approx(1.0)


def test_rule_baselines_on_hand_made_sentences():
    words = "hier chat qui dormait sur souris devant table sous poule a été [?]"
    example = toy.Example(words.split(), label=0, antecedent=1)
    guesses = {name: rule(example) for name, rule in toy.RULES.items()}
    assert guesses == {
        "nearest noun": 1,  # poule
        "nearest animal": 1,
        "opposite of the nearest animal": 0,
        "majority gender of the nouns": 1,  # souris, table, poule against chat
        "best bag of words": 0,  # three animals: no clue, masculine
        "first animal": 0,  # chat
    }
    with pytest.raises(ValueError, match="examples"):
        toy.rule_baselines([])


def test_heldout_set_is_the_one_training_measures_and_never_trains_on():
    result = toy.train(seed=0, steps=5, n_heldout=30)
    heldout = toy.heldout_examples(seed=0, n=30)
    assert [e.words for e in result.heldout] == [e.words for e in heldout]
    training_stream = toy.make_examples(5 * 64, seed=0)
    assert [e.words for e in training_stream[:30]] != [e.words for e in heldout]


def test_encode_left_pads_so_the_slot_is_last():
    examples = toy.make_examples(20, seed=2)
    batch = toy.encode(examples)
    width = max(len(e.words) for e in examples)
    assert batch.token_ids.shape == (20, width)
    assert (batch.token_ids[:, -1] == toy.TOKEN_ID[toy.SLOT]).all()
    for b, example in enumerate(examples):
        n = len(example.words)
        assert batch.keep[b].sum() == n and not batch.keep[b, : width - n].any()
        assert batch.positions[b, -n:].tolist() == list(range(n))
        subject = toy.VOCAB[int(batch.token_ids[b, batch.antecedent[b]])]
        assert subject == example.words[example.antecedent]
    with pytest.raises(ValueError, match="examples"):
        toy.encode([])


def test_model_never_attends_to_padding():
    torch.manual_seed(0)
    model = toy.AgreementModel(embed_dim=16, num_heads=2)
    batch = toy.encode(toy.make_examples(8, seed=5))
    logits, weights = model(batch)
    assert logits.shape == (8, 2) and weights.shape[:2] == (8, 2)
    pads = ~batch.keep[:, None, None, :].expand_as(weights)
    assert torch.equal(weights[pads], torch.zeros(int(pads.sum())))


def test_forward_pass_by_hand_positions_in_queries_and_keys_only():
    torch.manual_seed(1)
    model = toy.AgreementModel(embed_dim=16, num_heads=2)
    with torch.no_grad():  # as after training: positions no longer zero
        model.position_embedding.weight.normal_()
    attn = model.attention
    batch = toy.encode(toy.make_examples(6, seed=6))
    words = model.token_embedding(batch.token_ids)  # (B, S, D)
    where = words + model.position_embedding(batch.positions)
    q = qkv.split_heads(attn.W_q(where), 2)  # (B, H, S, E)
    k = qkv.split_heads(attn.W_k(where), 2)
    v = qkv.split_heads(attn.W_v(words), 2)
    mask = batch.keep[:, None, None, :]
    z, weights = qkv.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    context = attn.W_o(qkv.concat_heads(z))  # (B, S, D)
    logits = model.classifier(words[:, -1] + context[:, -1])
    got_logits, got_weights = model(batch)
    torch.testing.assert_close(got_logits, logits)
    torch.testing.assert_close(got_weights, weights)


def test_value_positions_put_positions_in_the_values_and_the_slot():
    torch.manual_seed(5)
    model = toy.AgreementModel(embed_dim=16, num_heads=2, value_positions=True)
    with torch.no_grad():
        model.position_embedding.weight.normal_()
    batch = toy.encode(toy.make_examples(6, seed=11))
    x = model.token_embedding(batch.token_ids) + model.position_embedding(
        batch.positions
    )
    context, weights = model.attention(x, attn_mask=batch.keep[:, None, None, :])
    logits = model.classifier(x[:, -1] + context[:, -1])
    got_logits, got_weights = model(batch)
    torch.testing.assert_close(got_logits, logits)
    torch.testing.assert_close(got_weights, weights)


def _shuffled_clause(example: toy.Example, seed: int) -> toy.Example:
    """The same words with the subject moved into the clause: a new order."""
    words = example.words[:-1]
    rng = random.Random(seed)
    rng.shuffle(words)
    return toy.Example([*words, toy.SLOT], example.label, 0)


def test_untrained_model_and_baselines_ignore_word_order():
    examples = toy.make_examples(8, seed=7)
    shuffled = [_shuffled_clause(e, i) for i, e in enumerate(examples)]
    assert [e.words for e in shuffled] != [e.words for e in examples]
    torch.manual_seed(2)
    models = {
        "untrained": toy.AgreementModel(embed_dim=16),
        "no positions": toy.AgreementModel(embed_dim=16, positions=False),
        "mean": toy.AgreementModel(embed_dim=16, pooling="mean"),
    }
    with torch.no_grad():  # the baselines must ignore order even after training
        for name in ("no positions", "mean"):
            models[name].position_embedding.weight.normal_()
    for name, model in models.items():
        with torch.no_grad():
            original, _ = model(toy.encode(examples))
            reordered, _ = model(toy.encode(shuffled))
        torch.testing.assert_close(original, reordered, msg=name)
    # Mean pooling: uniform weights over the real words.
    batch = toy.encode(examples)
    _, weights = models["mean"](batch)
    assert weights.shape == (8, 1, batch.keep.shape[1], batch.keep.shape[1])
    torch.testing.assert_close(weights.sum(-1), torch.ones(8, 1, weights.shape[2]))
    expected = 1 / batch.keep.sum(-1).float()
    torch.testing.assert_close(weights[:, 0, -1].max(-1).values, expected)


def test_slot_attention_splits_the_weight_by_role():
    torch.manual_seed(3)
    model = toy.AgreementModel(embed_dim=16, num_heads=2)
    with torch.no_grad():
        model.position_embedding.weight.normal_()
    examples = toy.make_examples(40, seed=8)
    shares = toy.slot_attention(model, examples)
    assert set(shares) == {*toy.ROLES, "nearest noun"}
    assert all(len(v) == 2 for v in shares.values())
    for h in range(2):
        assert sum(shares[role][h] for role in toy.ROLES) == pytest.approx(1, abs=1e-5)
    subject = toy.antecedent_attention(model, toy.encode(examples))
    assert shares["subject"] == pytest.approx(subject.tolist(), abs=1e-6)
    # By hand for one sentence and one role.
    example = examples[0]
    with torch.no_grad():
        _, weights = model(toy.encode([example]))
    alone = toy.slot_attention(model, [example])
    places = [i for i, r in enumerate(toy.roles(example)) if r == "preposition"]
    assert alone["preposition"][1] == pytest.approx(
        float(weights[0, 1, -1, places].sum()), abs=1e-6
    )
    assert alone["nearest noun"][0] == pytest.approx(
        float(weights[0, 0, -1, example.nearest_noun]), abs=1e-6
    )


def test_roles_name_every_word():
    words = "enfin chat qui dormait sur souris devant table a été [?]".split()
    example = toy.Example(words, label=0, antecedent=1)
    assert toy.roles(example) == [
        "filler",
        "subject",
        "qui",
        "verb",
        "preposition",
        "other animal",
        "preposition",
        "place",
        "ending",
        "ending",
        "slot",
    ]


def test_switching_a_head_off_equals_zeroing_its_values():
    torch.manual_seed(4)
    model = toy.AgreementModel(embed_dim=16, num_heads=2)
    batch = toy.encode(toy.make_examples(200, seed=9))
    size = model.attention.head_dim
    with torch.no_grad():
        before, _ = model(batch)
    parameters = {name: p.detach().clone() for name, p in model.named_parameters()}
    for h in range(2):
        zeroed = copy.deepcopy(model)
        with torch.no_grad():  # the values of head h are zero, so is its output
            zeroed.attention.W_v.weight[h * size : (h + 1) * size] = 0
            zeroed.attention.W_v.bias[h * size : (h + 1) * size] = 0
        expected = toy.accuracy(zeroed, batch)
        assert toy.accuracy_without_heads(model, batch, [h]) == expected
    assert toy.head_ablation(model, batch) == [
        toy.accuracy_without_heads(model, batch, [h]) for h in range(2)
    ]
    # Without any head, the classifier sees only the slot: one answer for all.
    share = float(batch.labels.float().mean())
    assert toy.accuracy_without_heads(model, batch, [0, 1]) in (
        pytest.approx(share),
        pytest.approx(1 - share),
    )
    # The model is unchanged afterwards: its parameters are the ones copied before
    # (exact: copies), and its output the same (a recomputation: a tolerance).
    for name, p in model.named_parameters():
        assert torch.equal(p, parameters[name]), name
    with torch.no_grad():
        torch.testing.assert_close(model(batch)[0], before)
    with pytest.raises(ValueError, match="heads"):
        toy.accuracy_without_heads(model, batch, [2])
    with pytest.raises(ValueError, match="pooling"):
        toy.accuracy_without_heads(toy.AgreementModel(16, pooling="mean"), batch, [0])


def test_short_training_is_deterministic_and_reports_everything():
    first = toy.train(seed=0, steps=8, n_heldout=50)
    second = toy.train(seed=0, steps=8, n_heldout=50)
    assert first.history == second.history and len(first.history) == 8
    assert first.attention_after == second.attention_after
    assert set(first.grad_norms) == {"W_q", "W_k", "W_v", "W_o"}
    assert all(len(v) == 8 and min(v) > 0 for v in first.grad_norms.values())
    assert 0.0 <= first.accuracy <= 1.0 and 0 <= first.head < 2
    assert first.seconds > 0 and first.cpu_seconds > 0
    # The untrained copy is the model as it was: different from the trained one,
    # with position embeddings at zero.
    trained = first.model.attention.W_q.weight
    assert not torch.equal(first.initial_model.attention.W_q.weight, trained)
    assert not first.initial_model.position_embedding.weight.any()
    assert toy.train(seed=1, steps=8, n_heldout=50).history != first.history


def test_mean_pooling_trains_only_the_projections_it_uses():
    result = toy.train(seed=0, steps=3, n_heldout=10, pooling="mean")
    assert set(result.grad_norms) == {"W_v", "W_o"}
    assert result.head == 0 and result.attention_after == pytest.approx(result.uniform)


def test_missed_targets_names_each_target():
    result = toy.train(seed=0, steps=2, n_heldout=20)
    result.accuracy, result.attention_after = 1.0, 0.9
    result.attention_before, result.uniform, result.cpu_seconds = 0.1, 0.1, 1.0
    assert result.missed_targets() == []
    result.accuracy, result.cpu_seconds = 0.5, 100.0
    assert result.missed_targets() == ["accuracy", "cpu_seconds"]
    result.accuracy, result.cpu_seconds, result.attention_before = 1.0, 1.0, 0.3
    assert result.missed_targets() == ["before_vs_uniform"]


# slow: the chapter's full training run, whose targets it checks
@pytest.mark.slow
@pytest.mark.parametrize("num_heads", [1, 2])
def test_full_training_meets_the_chapter_targets(num_heads):
    result = toy.train(seed=0, num_heads=num_heads)
    # The time target is `make bench-toy`'s: on a busy machine CPU time inflates too.
    missed = [t for t in result.missed_targets() if t != "cpu_seconds"]
    assert missed == [], (result.accuracy, result.attention_after)
    # Measured: the designated head gives the subject 0.87 (H=1) and 0.89 (H=2)
    # and nothing else comes close.
    shares = toy.slot_attention(result.model, result.heldout)
    head = result.head
    assert shares["subject"][head] == pytest.approx(result.attention_after)
    assert shares["other animal"][head] < 0.05 and shares["place"][head] < 0.05
    assert shares["nearest noun"][head] < 0.05
    # Without that head the model guesses (measured: 0.51 and 0.55).
    batch = toy.encode(result.heldout)
    assert toy.accuracy_without_heads(result.model, batch, [head]) < 0.7


#: The settings of the chapter's model (book/how-attention-learns.md), seed aside:
#: the seed tests train with the same arguments, so the build and the tests share
#: each trained result (fixture ``trained_results``).
CHAPTER_SETTINGS = {"steps": 400, "batch_size": 64, "embed_dim": 64, "num_heads": 2}
SEEDS = range(5)


def chapter_run(seed, **change):
    return toy.train(**(CHAPTER_SETTINGS | {"seed": seed}), **change)


@pytest.mark.slow
def test_one_head_finds_the_subject_and_matters_most_on_seeds_0_to_4(
    trained_results,
):
    """slow: trains the chapter's model on five seeds (about 3 s each)."""
    # Measured: accuracy 1.0 on every seed; the head gives the subject 0.888 to
    # 0.975; without it 0.553, 0.659, 0.484, 0.990, 0.703; without the other
    # 1.0, 0.926, 1.0, 1.0, 1.0.
    for seed in SEEDS:
        run = chapter_run(seed)
        assert run.missed_targets() in ([], ["cpu_seconds"]), seed
        shares = toy.slot_attention(run.model, run.heldout)
        head, other = run.head, 1 - run.head
        assert shares["other animal"][head] + shares["place"][head] < 0.05, seed
        without = toy.head_ablation(run.model, toy.encode(run.heldout))
        assert without[head] <= without[other], (seed, without)


@pytest.mark.slow
def test_which_heads_the_model_needs_changes_with_the_seed_on_seeds_0_to_4(
    trained_results,
):
    """slow: trains the chapter's model on five seeds (about 3 s each)."""
    without_main = {}
    for seed in SEEDS:
        run = chapter_run(seed)
        without = toy.head_ablation(run.model, toy.encode(run.heldout))
        without_main[seed] = without[run.head]
    # Seed 0: near chance without its head (the chapter's one-run story).
    rules = toy.rule_baselines(chapter_run(0).heldout)
    noise = (0.25 / len(chapter_run(0).heldout)) ** 0.5
    assert without_main[0] <= rules["best bag of words"] + 3 * noise
    # Below 0.7 on some seeds, not on all.
    assert 0 < sum(a < 0.7 for a in without_main.values()) < len(SEEDS)
    # Seed 3: both heads look at the subject and either one is enough.
    run = chapter_run(3)
    shares = toy.slot_attention(run.model, run.heldout)
    assert min(shares["subject"]) > 0.8  # measured 0.89 or more
    assert min(toy.head_ablation(run.model, toy.encode(run.heldout))) >= 0.9


@pytest.mark.slow
def test_models_without_word_order_stay_near_chance_on_seeds_0_to_4(
    trained_results,
):
    """slow: trains the chapter's two baselines on five seeds (about 3 s each)."""
    # Measured: 0.506 to 0.529 without positions, 0.499 to 0.525 with the mean.
    for seed in SEEDS:
        model = chapter_run(seed).accuracy
        bag = toy.rule_baselines(toy.heldout_examples(seed))["best bag of words"]
        for name, change in toy.MODEL_BASELINES.items():
            accuracy = chapter_run(seed, **change).accuracy
            assert accuracy <= 0.6 and accuracy <= bag + 0.05, (seed, name)
            assert model - accuracy > 0.3, (seed, name)


# slow: a full training run, for the chapter's claim about it
@pytest.mark.slow
def test_without_lone_subjects_one_head_learns_the_opposite_of_the_others():
    # Measured: seeds 0 to 3 all end near 0.73, seed 4 finds the subject.
    result = toy.train(seed=0, num_heads=1, subject_alone=0.0)
    shares = toy.slot_attention(result.model, result.heldout)
    assert 0.6 <= result.accuracy <= 0.8 and result.attention_after < 0.1
    assert shares["other animal"][0] >= 0.5  # measured: 0.72


# slow: a full training run, for the chapter's claim about it
@pytest.mark.slow
def test_with_positions_in_the_values_a_head_can_be_right_and_lopsided():
    # Measured: 9 of the one-head models of seeds 5 to 24 give the subject less
    # than 0.7 of the slot's weight; seed 7 gives it 0.51: 0.95 when it is
    # feminine, 0.07 when it is masculine, and every answer is right.
    result = toy.train(seed=7, num_heads=1, value_positions=True)
    batch = toy.encode(result.heldout)
    with torch.no_grad():
        _, weights = result.model(batch)
    rows = torch.arange(len(result.heldout))
    subject = weights[rows, 0, -1, batch.antecedent]  # (B,)
    by_label = [float(subject[batch.labels == label].mean()) for label in (0, 1)]
    assert result.accuracy >= 0.95
    assert 0.35 <= result.attention_after <= 0.65
    assert abs(by_label[1] - by_label[0]) >= 0.6, by_label


def test_subject_alone_sets_the_share_of_one_animal_sentences():
    rng = random.Random(10)
    assert all(not toy.make_example(rng, 1.0).other_animals for _ in range(50))
    assert all(toy.make_example(rng, 0.0).other_animals for _ in range(50))


def test_train_rejects_bad_settings():
    with pytest.raises(ValueError, match="steps"):
        toy.train(steps=0)
    with pytest.raises(ValueError, match="pooling"):
        toy.train(steps=1, pooling="max")
    with pytest.raises(ValueError, match="subject_alone"):
        toy.train(steps=1, subject_alone=1.5)


def test_training_works_when_the_caller_disabled_gradients():
    with torch.no_grad():
        result = toy.train(seed=0, steps=3, n_heldout=10)
    assert len(result.history) == 3


def test_labels_name_every_rule_model_and_role_in_both_languages():
    names = sorted(
        {
            *toy.rule_baselines(toy.make_examples(4, seed=0)),
            *toy.MODEL_BASELINES,
            *toy.ROLES,
            "nearest noun",  # also the extra key of slot_attention
        }
    )
    assert set(names) == set(toy.DISPLAY_NAMES)
    try:
        assert [toy.label(name) for name in names] == names  # English: the key
        qkv.set_language("fr")
        french = [toy.label(name) for name in names]
        assert toy.label("nearest noun") == "nom le plus proche"
        assert len(set(french)) == len(names) and all(french)
    finally:
        qkv.set_language("en")
    with pytest.raises(ValueError, match="name"):
        toy.label("nearest verb")
