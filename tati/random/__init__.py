"""Random numbers: the seed inside compiled programs, walker-keyed Philox streams, Box-Muller and its angles, the draws handed to TensorFlow Probability."""
