"""``kssim timeline``: one picture of a scenario (``model.py``: what it shows, as data;
``draw.py``: the matplotlib drawing)."""
