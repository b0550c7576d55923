# syntax=docker/dockerfile:1
ARG PYTHON=3.12
FROM python:${PYTHON}-slim AS runtime

LABEL org.opencontainers.image.title="Example app" \
      org.opencontainers.image.source=https://example.com/app

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    APP_HOME=/srv/app

RUN apt-get update \
 && apt-get install -y --no-install-recommends git curl \
 && rm -rf /var/lib/apt/lists/*

WORKDIR $APP_HOME
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY --chown=app:app src/ ./src/
ARG BUILD_ID=dev
RUN useradd --create-home app
USER app
EXPOSE 8000
CMD ["python", "-m", "src.main"]
