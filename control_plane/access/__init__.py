"""The one authorization layer: who the caller is, what they may do, and every access label of
spec §5 as a reusable dependency.

* :mod:`.caller`: a bearer token turned into a :class:`Principal` (revocations shared);
* :mod:`.keys`: the process's cache of keys by hash;
* :mod:`.tenancy`: organization and project access, ids in the path, roles (no FastAPI);
* :mod:`.labels`: the labels as FastAPI dependencies (``SignedIn`` … ``IndexWrite``);
* :mod:`.storefront`: the storefront's key, origin and session checks;
* :mod:`.registry`: what the layer asks the domains (it imports none of them).

Callers import from the module that defines a name: this face hands nothing on, so importing
:mod:`.keys` or :mod:`.registry` (the runtime does) loads nothing that needs the runtime.
"""
