"""Entry point of sprokr-ot: registers the FGW-barycenter decoder (lazily: POT is
imported on first use)."""
import sprokr
from sprokr.registry import lazy_factory


@sprokr.hookimpl
def sprokr_decoders():
    return {"fgw_barycenter": lazy_factory("sprokr_ot.fgw:FGWBarycenterDecoder")}
