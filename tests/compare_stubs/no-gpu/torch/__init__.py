# tests/compare_stubs/no-gpu/torch — stands in for PyTorch on a machine
# without a GPU (tests/compare.sh puts this folder first on PYTHONPATH):
# it imports, and torch.cuda.is_available() is False.
__version__ = "0.0-stand-in"


class version:
    cuda = "12.8"


class cuda:
    @staticmethod
    def is_available():
        return False
