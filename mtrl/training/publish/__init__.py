"""The publish stage: the updated parameters handed to the sampler.

  publisher.py  PublishStage: each policy's parameters out of the train state, made
                whole on this process, set on every backend over the sampler
"""
