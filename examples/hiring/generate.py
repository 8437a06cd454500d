"""Generate the synthetic "hiring" scenario: a candidate ranker audited under NYC Local Law 144.

The story
---------
A staffing firm posts jobs; for each job posting (one *query*) 12-30 candidates apply, and a LightGBM LambdaMART
ranker orders them for the recruiters, who interview from the top. New York City's Local Law 144 makes that ranker
an automated employment decision tool: it needs a yearly independent bias audit of its scoring rates and impact
ratios per sex, race/ethnicity and intersectional category (6 RCNY §5-301).

Each candidate has five qualifications that say how well they fit the posting (``skills_match`` 0-1,
``years_experience``, ``assessment_score`` 0-100, ``education_level`` 0-4, ``certifications``), drawn alike for
everyone, and two more facts:

* ``career_gap_months``: months without work in the last five years. Women are more likely to have one (a caring
  break); it says nothing about the fit for the job;
* ``neighbourhood_index`` 0-1: a score of the candidate's home area, lower on average for Black and Hispanic or
  Latino candidates (residential segregation); it says nothing about the fit either.

``sex`` (Female, Male, or left empty by about 3% of candidates) and ``race_ethnicity`` (the EEO-1 component 1
categories, two of them under 2% of candidates, and "Unknown" for about 2%) are recorded for the audit only: no
model reads them.

The label (grade 0-3: rejected, screened, interviewed, hired) comes from a hidden fit made of the qualifications
alone, plus noise. Two rankers are trained on the same training postings:

* ``model-biased.txt`` learns from past recruiters' decisions, which marked down career gaps and low-index
  neighbourhoods (the grades are shifted by both), and reads all seven facts: it learns the proxies;
* ``model-fair.txt`` learns from the grades of fit and reads the five qualifications only.

Both are audited on ``test.csv`` (120 postings the models never saw, the grades of fit as labels) by
``audit.yaml`` (biased) and ``audit-fair.yaml``. Everything comes from one ``numpy.random.default_rng(seed)``, floats
are written with a fixed format and LightGBM runs deterministically on one thread: two runs with the same seed write
byte-identical files. Regenerate with ``.venv/bin/python examples/hiring/generate.py``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
DEFAULT_SEED = 144
N_TRAIN_POSTINGS = 240
N_TEST_POSTINGS = 300
FLOAT_FORMAT = "%.4g"
QUALIFICATIONS = ["skills_match", "years_experience", "assessment_score", "education_level", "certifications"]
PROXIES = ["career_gap_months", "neighbourhood_index"]
SEXES = (("Female", 0.48), ("Male", 0.49), ("", 0.03))
RACES = (("White", 0.42), ("Hispanic or Latino", 0.19), ("Black or African American", 0.16), ("Asian", 0.15),
         ("Two or More Races", 0.035), ("American Indian or Alaska Native", 0.012),
         ("Native Hawaiian or Other Pacific Islander", 0.008), ("Unknown", 0.025))
LOW_INDEX = {"Black or African American": 0.28, "Hispanic or Latino": 0.2}  # the neighbourhood index's lower mean
GAP_PENALTY, AREA_PENALTY = 1.5, 2.5  # past recruiters' mark-downs, in grades, that the biased ranker learns


def candidates(rng: np.random.Generator, postings: range) -> pd.DataFrame:
    """Every posting's candidates with their qualifications, the two proxies, the audit's categories and the grade
    of fit (from the qualifications alone)."""
    sizes = rng.integers(12, 31, size=len(postings))
    n = int(sizes.sum())
    sex = rng.choice([s for s, _ in SEXES], size=n, p=[p for _, p in SEXES])
    race = rng.choice([r for r, _ in RACES], size=n, p=[p for _, p in RACES])
    skills = rng.beta(2.0, 2.5, size=n)
    years = np.round(rng.gamma(2.0, 3.0, size=n), 1)
    assessment = np.clip(np.round(rng.normal(65, 14, size=n)), 0, 100)
    education = rng.choice(5, size=n, p=[0.08, 0.3, 0.37, 0.2, 0.05])
    certifications = rng.poisson(1.2, size=n)
    gap_chance = np.where(sex == "Female", 0.42, 0.12)
    gap = np.where(rng.random(n) < gap_chance, np.round(rng.uniform(4, 30, size=n)), 0.0)
    index_mean = np.array([0.62 - LOW_INDEX.get(r, 0.0) for r in race])
    neighbourhood = np.clip(rng.normal(index_mean, 0.15), 0, 1)
    fit = (2.2 * skills + 0.08 * np.minimum(years, 12) + 0.025 * (assessment - 65) + 0.25 * education
           + 0.15 * np.minimum(certifications, 4) + rng.normal(0, 0.45, size=n))
    posting = np.repeat(np.asarray(postings), sizes)
    grade = np.zeros(n, dtype=np.int64)
    for start, end in zip(np.cumsum(sizes) - sizes, np.cumsum(sizes), strict=True):  # grades within each posting
        order = np.argsort(np.argsort(-fit[start:end], kind="stable"), kind="stable") / (end - start)
        grade[start:end] = np.select([order < 0.08, order < 0.25, order < 0.55], [3, 2, 1], 0)
    return pd.DataFrame({
        "posting_id": posting, "candidate_id": [f"c{p}-{i}" for p, s in zip(postings, sizes, strict=True)
                                                for i in range(s)],
        "label": grade, "skills_match": skills.round(4), "years_experience": years, "assessment_score": assessment,
        "education_level": education, "certifications": certifications, "career_gap_months": gap,
        "neighbourhood_index": neighbourhood.round(4), "sex": sex, "race_ethnicity": race})


def past_decisions(frame: pd.DataFrame) -> np.ndarray:
    """The grades past recruiters gave: the grade of fit, marked down for a career gap and a low-index area."""
    marked = (frame["label"] - GAP_PENALTY * (frame["career_gap_months"] > 0)
              - AREA_PENALTY * np.clip(0.5 - frame["neighbourhood_index"], 0, None) * 2)
    return np.clip(np.round(marked), 0, 3).to_numpy()


def train(frame: pd.DataFrame, target: np.ndarray, features: list[str], seed: int) -> lgb.Booster:
    params = {"objective": "lambdarank", "num_leaves": 7, "learning_rate": 0.1, "min_data_in_leaf": 20,
              "deterministic": True, "force_row_wise": True, "num_threads": 1, "seed": seed, "verbosity": -1}
    sizes = frame.groupby("posting_id", sort=False).size().to_numpy()
    data = lgb.Dataset(frame[features], label=target, group=sizes, feature_name=features)
    return lgb.train(params, data, num_boost_round=80)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Generate the synthetic hiring scenario (NYC LL144).")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"RNG seed (default {DEFAULT_SEED})")
    parser.add_argument("--out", type=Path, default=HERE, help="output folder (default: this script's folder)")
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    training = candidates(rng, range(1, N_TRAIN_POSTINGS + 1))
    test = candidates(rng, range(N_TRAIN_POSTINGS + 1, N_TRAIN_POSTINGS + N_TEST_POSTINGS + 1))
    test.to_csv(out / "test.csv", index=False, float_format=FLOAT_FORMAT, lineterminator="\n")
    biased = train(training, past_decisions(training), QUALIFICATIONS + PROXIES, args.seed)
    fair = train(training, training["label"].to_numpy(), QUALIFICATIONS, args.seed)
    biased.save_model(str(out / "model-biased.txt"))
    fair.save_model(str(out / "model-fair.txt"))
    print(f"test: {len(test)} candidates in {test['posting_id'].nunique()} postings; training: {len(training)} in "
          f"{training['posting_id'].nunique()} (not written: the models are)")
    for name in ("test.csv", "model-biased.txt", "model-fair.txt"):
        print(f"wrote {out / name} ({(out / name).stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
