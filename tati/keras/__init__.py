"""Keras integration: the callbacks that record a sampler run inside model.fit."""
