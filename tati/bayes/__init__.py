"""Bayesian tools on a run: the posterior predictive and SWAG."""
