"""biastest · language models: the stereotype score of masked and causal LMs, step by step."""

from biastest.ui.common import launch_kwargs
from biastest.ui.gpt import build_demo
from biastest.ui.serve import configure_queue

demo = configure_queue(build_demo())

if __name__ == "__main__":
    demo.launch(**launch_kwargs())
