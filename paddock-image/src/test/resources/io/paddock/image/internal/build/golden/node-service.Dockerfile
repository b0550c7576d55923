# escape=`
FROM node:20-bookworm-slim
maintainer Platform Team <platform@example.com>
ARG NODE_ENV=production
env NODE_ENV=${NODE_ENV} `
    PORT=3000
WorkDir /usr/src/app
COPY ["package.json", "package-lock.json", "./"]
RUN npm ci --omit=dev
ADD vendor.tar.gz /opt/vendor/
COPY . .
# the server listens on $PORT
EXPOSE $PORT/tcp 9229
USER node
ENTRYPOINT exec node server.js
