# The package in a container, CPU or GPU, to run the cost study (or any experiment) the same way
# as on bare metal -- the paper's Docker-vs-bare comparison (cloudcost2017, finding 1).
#
#   docker build -t repro:cpu .                                  # CPU: tensorflow-cpu
#   docker build -t repro:gpu --build-arg VARIANT=gpu .           # GPU: tensorflow[and-cuda] (CUDA from PyPI)
#
#   # the same sweep as on bare metal; results land in ./results on the host
#   docker run --rm -v "$PWD/results:/repro/results" repro:cpu repro run cost_study --profile cpu
#   docker run --rm --gpus all -v "$PWD/results:/repro/results" repro:gpu repro run cost_study --profile paper
#   # pin the container to k cores as the paper's VMs were: --cpuset-cpus 0-7
#
# Compare a container run with a bare-metal run of the same profile on the same host (runs.csv,
# timing.csv of each); every run inside records "inside_docker": true in its provenance.
# With internet, the `paper` profile downloads MNIST and CIFAR-10 through Keras on first use;
# mount a cache to keep them: -v "$HOME/.keras:/root/.keras".
ARG PYTHON=3.11
FROM python:${PYTHON}-slim

ARG VARIANT=cpu
ENV PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 TF_CPP_MIN_LOG_LEVEL=2 REPRO_IN_DOCKER=1 \
    REPRO_RESULTS=/repro/results

# Fashion-MNIST from Debian: the offline source of the declared CIFAR-10 stand-in (optional).
RUN apt-get update \
    && (apt-get install -y --no-install-recommends dataset-fashion-mnist \
        || echo "dataset-fashion-mnist not in this base image's archive: Keras downloads Fashion-MNIST instead") \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /repro
COPY pyproject.toml README.md _toc.yml _config.yml ./
COPY src ./src
COPY notebooks ./notebooks
COPY book ./book
RUN case "$VARIANT" in cpu|gpu) ;; *) echo "VARIANT must be cpu or gpu" >&2; exit 1;; esac \
    && pip install -e ".[${VARIANT},test]" \
    && python -m ipykernel install --sys-prefix --name repro --display-name "Python (repro)"

CMD ["repro", "run", "cost_study", "--profile", "smoke"]
