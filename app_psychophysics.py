"""Word-embedding bias tests: psychophysics 2AFC and WEAT/MAC."""
from biastest.ui.common import launch_kwargs
from biastest.ui.psychophysics import build_demo
from biastest.ui.serve import configure_queue

demo = configure_queue(build_demo())
if __name__ == "__main__":
    demo.launch(**launch_kwargs())
