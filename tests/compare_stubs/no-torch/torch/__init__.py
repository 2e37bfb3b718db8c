# tests/compare_stubs/no-torch/torch — stands in for a machine without
# PyTorch (tests/compare.sh, tests/test_compare.py put this folder first on
# PYTHONPATH): `import torch` fails, as it does where PyTorch is not installed.
raise ImportError("No module named 'torch' (the stand-in of tests/compare_stubs/no-torch)")
