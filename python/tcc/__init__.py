"""tcc from Python: compile a model (an ONNX file or a torch.nn.Module) to an
artifact, train it in a Session, and take the weights back out.

    import tcc
    artifact = tcc.compile(model, {"x": x}, loss="mse(output,target)",
                           optimizer="adamw:lr=1e-3")
    with tcc.Session(artifact) as s:
        for x, y in data:
            loss = s.step({"x": x, "target": y})
        model.load_state_dict(s.state_dict(), strict=False)

The guide: docs/python.md. tcc.torch holds the PyTorch-specific parts
(export, compile_train_step); it imports torch only when used.
"""

from ._errors import TccError
from ._native import ARTIFACT_VERSION
from .compiler import Artifact, compile
from .export import export
from .session import Session, TensorInfo

__all__ = ["ARTIFACT_VERSION", "Artifact", "Session", "TccError", "TensorInfo",
           "compile", "export"]
