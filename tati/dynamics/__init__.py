"""Dynamics: the pure split steps (kicks, drifts, Ornstein-Uhlenbeck), the Metropolis test and the rules of HMC's legs."""
