"""Entry point of sprokr-ot: registers the FGW-barycenter decoder."""
import sprokr


@sprokr.hookimpl
def sprokr_decoders():
    from .fgw import FGWBarycenterDecoder

    return {FGWBarycenterDecoder.name: FGWBarycenterDecoder}
