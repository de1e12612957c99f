import os
import lit.formats

config.name = "tcc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.join(config.tcc_src_root, "test", "lit")
config.test_exec_root = os.path.join(config.tcc_obj_root, "test", "lit")
config.excludes = ["Inputs"]

tools = os.path.join(config.tcc_obj_root, "bin")
config.environment["PATH"] = os.pathsep.join(
    [tools, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%python", config.python3))
config.substitutions.append(("%models", os.path.join(config.tcc_src_root, "test", "models")))
config.substitutions.append(("%examples", os.path.join(config.tcc_src_root, "examples")))
config.substitutions.append(("%src", config.tcc_src_root))
config.substitutions.append(("%mlir-tblgen", config.mlir_tblgen))
config.substitutions.append(("%mlir-include", config.mlir_include_dir))

# Compiled kernels are cached in the build tree, never in the user's
# ~/.cache; tests of the cache itself name their own directory.
config.environment["TCC_CACHE_DIR"] = os.path.join(config.tcc_obj_root, "test", "kernel-cache")

# `REQUIRES: chromium`: screenshots of the HTML report (Debian's chromium,
# which scripts/bootstrap.sh installs).
import shutil
if shutil.which("chromium"):
    config.available_features.add("chromium")
else:
    lit_config.note("chromium not found: the report screenshot test is "
                    "skipped (scripts/bootstrap.sh installs it)")

# `REQUIRES: venv`: current PyTorch's exporters, from the project's pinned
# environment (scripts/venv.sh, which the README's commands run).
if os.access(config.venv_python, os.X_OK):
    config.available_features.add("venv")
    config.substitutions.append(("%venv-python", config.venv_python))
else:
    lit_config.note("%s not found: tests of current PyTorch's exports are "
                    "skipped (scripts/venv.sh creates it)" % config.venv_python)

# `REQUIRES: mpi`: data-parallel runs under Open MPI's mpirun (scripts/
# bootstrap.sh installs openmpi-bin and libopenmpi-dev; CMake then builds the
# runtime's MPI module). CI runs as root, which mpirun refuses unless told.
if shutil.which("mpirun"):
    config.available_features.add("mpi")
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    config.environment["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
else:
    lit_config.note("mpirun not found: the data-parallel tests are skipped")

# `REQUIRES: nvcc`: tests that build CUDA fatbins.
if config.tcc_nvcc and not config.tcc_nvcc.endswith("NOTFOUND"):
    config.available_features.add("nvcc")
