from setuptools import find_packages, setup

setup(
    name="tati",
    version="0.1.0",
    description="Thermodynamic sampling toolkit for TensorFlow: Langevin and Hamiltonian samplers "
                "as Keras 3 optimizers, with run-info, trajectory and averages tables",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["tati", "tati.*"]),
    install_requires=[
        "tensorflow>=2.18,<2.22",
        # TensorFlow Probability 0.25 imports tf-keras; its minor version must match
        # TensorFlow's, which tf-keras' own requirement on tensorflow enforces.
        "tf-keras>=2.18,<2.22",
        "tensorflow-probability>=0.25,<0.26",
        "numpy>=1.26",
        "pandas>=2.0",
        "scipy>=1.11",
    ],
    extras_require={
        "progress": ["tqdm>=4.60"],
        "plots": ["matplotlib>=3.7"],
        # ArviZ 1.0 replaces InferenceData by xarray's DataTree: to_inference_data is written for 0.x.
        "arviz": ["arviz>=0.17,<1"],
        "tensorboard": ["tensorboard>=2.18"],  # to view summaries_path; writing needs only TensorFlow
        "examples": ["scikit-learn>=1.3"],  # the diabetes data of examples/bayesian_diabetes.py
        # the figures, the ArviZ export, the event files (read back by TensorBoard) and the diabetes
        # example are tested
        "test": ["pytest>=7.4", "pytest-xdist>=3.5", "hypothesis>=6.80", "matplotlib>=3.7", "arviz>=0.17,<1", "tensorboard>=2.18",
                 "scikit-learn>=1.3"],
    },
    entry_points={
        "console_scripts": [
            "tati-sample=tati.cli.sample:main",
            "tati-optimize=tati.cli.optimize:main",
            "tati-analyse=tati.cli.analyse:main",
            "tati-lossfunction-sampler=tati.cli.lossfunction:main",
            "tati-predictive=tati.cli.predictive:main",
            "tati-dataset-writer=tati.cli.dataset_writer:main",
            # the original TATi's names (tati/config/original.py, doc/migration.md)
            "TATiSampler=tati.cli.sample:main",
            "TATiOptimizer=tati.cli.optimize:main",
            "TATiAnalyser=tati.cli.analyse:main",
            "TATiLossFunctionSampler=tati.cli.lossfunction:main",
            "TATiDatasetWriter=tati.cli.dataset_writer:main",
            "TATiExplorer=tati.cli.original:explorer",
            "TATiInputSpaceSampler=tati.cli.original:input_space_sampler",
            "TATiDatasetParser=tati.cli.original:dataset_parser",
            "NumericalDiff=tati.cli.original:numerical_diff",
        ],
    },
)
