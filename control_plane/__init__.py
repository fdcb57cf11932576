"""The control plane: FastAPI app owning tenants, keys, indices, documents and the task queue."""
