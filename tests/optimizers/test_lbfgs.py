"""optimizer="L-BFGS" for fit(): tfp's L-BFGS on the whole dataset, one iteration per step."""

import numpy as np
import pandas as pd
import pytest

import tati
from stats import seed
from tati.errors import InputError


def badly_scaled_regression():
    """A linear regression whose predictors have scales 1, 10 and 1000 (a Hessian of condition
    number about 1e6): (features, labels, the least-squares weights and bias)."""
    rng = np.random.default_rng(seed(4500))
    features = rng.normal(size=(200, 3)) * [1.0, 10.0, 1000.0]
    labels = features @ [0.5, -0.03, 0.001] + 0.2 + 0.1 * rng.normal(size=200)
    exact = np.linalg.lstsq(np.hstack([features, np.ones((200, 1))]), labels, rcond=None)[0]
    return features, labels[:, None], exact


def regression(**options):
    features, labels, exact = badly_scaled_regression()
    settings = dict(dataset=(features, labels), hidden_dimension=[], output_activation="linear",
                    loss="mean_squared", optimizer="L-BFGS", dtype="float64", every_nth=1)
    settings.update(options)
    return tati.Simulation(**settings), exact


def test_reaches_the_least_squares_solution_in_a_few_iterations():
    """Every walker (each from its own start) at the exact solution within 1e-6, in at most 50
    iterations of max_steps 500: the run stops when all have converged."""
    sim, exact = regression(max_steps=500, number_walkers=3)
    result = sim.fit()
    assert result.run_info["step"].max() <= 50
    np.testing.assert_allclose(sim.parameters, np.broadcast_to(exact, (3, 4)), rtol=1e-6, atol=1e-9)
    assert result.run_info.groupby("id")["loss"].apply(lambda x: x.is_monotonic_decreasing).all()


def test_a_resumed_minimisation_continues_bitwise(tmp_path):
    """3 iterations, a checkpoint, 4 more in a new Simulation: the rows of 7 in one go."""
    whole = regression(max_steps=7)[0].fit().run_info
    checkpoint = str(tmp_path / "c.npz")
    first = regression(max_steps=3, save_model=checkpoint)[0].fit().run_info
    rest = regression(max_steps=4, restore_model=checkpoint)[0].fit().run_info
    joined = pd.concat([first, rest], ignore_index=True).drop(columns="time_per_nth_step")
    pd.testing.assert_frame_equal(joined, whole.drop(columns="time_per_nth_step"))


def test_mini_batches_are_refused():
    with pytest.raises(InputError, match="batch_size: optimizer L-BFGS"):
        regression(batch_size=10)
