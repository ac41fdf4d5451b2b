"""biastest: test social bias in language, vision-language and embedding models.

The backend of the three apps (``app_gpt.py``, ``app_vqa.py``,
``app_psychophysics.py``). See the README for the methods and references.
"""

__version__ = "0.1.0"
