/**
 * The image build model's front end for Dockerfiles: {@link io.paddock.image.internal.build.Dockerfile}
 * parses a Dockerfile into the {@link io.paddock.ImageStep}s that the Java builder {@link io.paddock.Image}
 * also makes; {@link io.paddock.image.internal.build.DockerIgnore} and
 * {@link io.paddock.image.internal.build.BuildContext} find and hash the files its {@code COPY} and
 * {@code ADD} steps read. Pure description: the executor that runs the steps lives elsewhere.
 */
package io.paddock.image.internal.build;
