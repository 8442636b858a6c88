"""Today's numbers, bit for bit (issue #39), part "loops" of tools/record_fixture.py: fit() with
every optimizer, the XLA loop (BAOAB, HMC2 with burn-in, NUTS, GradientDescent), a checkpoint
saved and resumed (its tables, CSV files and state) and a mirrored run over 4 logical CPUs.
The part "samplers" and how both are compared: test_bitwise_fixture.py."""

from test_bitwise_fixture import comparison_of

recorded, test_tables_are_the_fixtures_bit_for_bit = comparison_of("loops")
