"""The Spark backend's join operators (the same families as ``reference.joins``), set-based where
the rules allow; each module's docstring says which rule is computed how."""
