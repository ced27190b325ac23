# The evalgate GitHub Action's image. BASE_IMAGE is any Debian-like image with python3 and
# python3-venv (the default, or a local base for offline builds: --build-arg BASE_IMAGE=...).
ARG BASE_IMAGE=python:3.12-slim

FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
# README.m[d]: optional, so the glob does not fail a build without it
COPY pyproject.toml README.m[d] ./
COPY evalgate ./evalgate
# Build into a venv (works on plain Debian too, where the system pip is externally managed),
# then drop pip and setuptools: the runtime needs neither.
RUN python3 -m venv /opt/evalgate \
    && /opt/evalgate/bin/pip install ".[mastra-nlp]" \
    && /opt/evalgate/bin/pip uninstall -y pip setuptools \
    && find /opt/evalgate -name '__pycache__' -prune -exec rm -rf {} + \
    && /opt/evalgate/bin/python -m compileall -q /opt/evalgate/lib
COPY entrypoint.py /opt/evalgate/entrypoint.py

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="evalgate" \
      org.opencontainers.image.description="Eval gates for LLM agents, as a GitHub Action"
COPY --from=build /opt/evalgate /opt/evalgate
ENV PATH=/opt/evalgate/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# The runner runs container actions as root and mounts the workspace at /github/workspace.
ENTRYPOINT ["/opt/evalgate/bin/python", "/opt/evalgate/entrypoint.py"]
