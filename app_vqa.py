"""Vision-language bias test app: CLIP, ViLT, BLIP, GIT … on retrieved, generated or uploaded images."""

from biastest.ui.common import launch_kwargs
from biastest.ui.serve import configure_queue
from biastest.ui.vqa import build_demo

demo = configure_queue(build_demo())

if __name__ == "__main__":
    demo.launch(**launch_kwargs())
