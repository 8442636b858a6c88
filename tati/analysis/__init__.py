"""Reading the landscape of a finished or interrupted run: its tables read back, and one
analysis per question, each a function of a Result (or of load_run's tables) returning a
DataFrame, with a plot function writing a PNG (matplotlib, the extra `plots`).

    from tati.analysis import load_run, autocorrelation
    result = load_run("results/")                # or run_file=..., trajectory_file=..., averages_file=...
    autocorrelation(result, burn_in=1000)        # tau, ESS, R-hat per parameter and eigenvector

| module | question | function |
|---|---|---|
| runs.py | the Result of a run from its CSV files | load_run, read_run |
| traces.py | traces and running means of loss, energies, parameters | traces |
| moments.py | means and variances, plain and Boltzmann-weighted | moments |
| covariance.py | covariance, its eigenvalues and eigenvectors | covariance |
| autocorrelation.py | autocorrelation time, ESS, R-hat, verdict | autocorrelation |
| temperature.py | kinetic and configurational temperature | temperature |
| free_energy.py | free energy along eigenvectors or parameters | free_energy |
| diffusion_map.py | diffusion coordinates, vanilla or target-measure reweighted | diffusion_map |

The command-line tool is tati-analyse (tati/cli/analyse.py, doc/analysis.md). Importing this
package imports neither TensorFlow nor matplotlib: autocorrelation() imports TensorFlow
Probability (through tati.diagnostics.convergence), load_run() the Result class.
"""

# The functions replace the package attributes of their modules' names (tati.analysis.traces is
# the function; its module is sys.modules["tati.analysis.traces"]). None imports TensorFlow.
from tati.analysis.autocorrelation import autocorrelation  # noqa: E402
from tati.analysis.covariance import Covariance, covariance  # noqa: E402
from tati.analysis.diffusion_map import DiffusionMap, diffusion_map  # noqa: E402
from tati.analysis.free_energy import free_energy  # noqa: E402
from tati.analysis.moments import moments  # noqa: E402
from tati.analysis.runs import RunTables, load_run, read_run  # noqa: E402
from tati.analysis.temperature import temperature  # noqa: E402
from tati.analysis.traces import traces  # noqa: E402

__all__ = ["Covariance", "DiffusionMap", "RunTables", "autocorrelation", "covariance", "diffusion_map",
           "free_energy", "load_run", "moments", "read_run", "temperature", "traces"]
