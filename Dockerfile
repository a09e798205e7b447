# Gateway image for compose.yaml (the embedded default needs no Docker).
FROM python:3.11-slim
WORKDIR /app
COPY . /app
RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/* \
 && pip install --no-cache-dir . && python -m substrate.local_model
EXPOSE 8080
CMD ["substrate", "serve"]
